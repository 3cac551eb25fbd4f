/**
 * The local agent server's own database (`<saver dbName>-agent-threads` by
 * default), beside the saver's: thread records, run records, and each run's
 * stream events, so that another tab's server, or this tab's after a reload,
 * can report a run and replay what it streamed. Each upgrade step, once
 * released, is never edited, only followed by a new one.
 */
import type { DBSchema } from "idb";
import { Database } from "../idb/database.js";
import type { Upgrade } from "../idb/types.js";
import type { RunRecord, SentEvent, ThreadRecord } from "./records.js";

/**
 * A stored thread: the record and its creation order, which breaks ties of
 * `created_at` (threads created in one millisecond) as the Agent Server's
 * insertion order does.
 */
export interface ThreadRow extends ThreadRecord {
  seq: number;
}

/** A stored run event beside a saver that does not encrypt: the event as sent, under its run. */
export interface ClearEventRow extends SentEvent {
  run_id: string;
}

/**
 * A stored run event beside a saver that encrypts (event-seal.ts): its
 * `data` sealed by the saver's serializer for this row (the type and bytes
 * it gave), never kept in clear; its id and name stay clear.
 */
export interface SealedEventRow {
  run_id: string;
  id: number;
  event: string;
  sealed: [type: string, bytes: Uint8Array];
}

/** A stored run event, under its run. */
export type RunEventRow = ClearEventRow | SealedEventRow;

/**
 * A thread-less run's own thread whose delete is under way or failed
 * (leftover-threads.ts): recorded before the first delete, removed once the
 * thread is gone; a server starting deletes those left, if still the same
 * thread (`created_at`).
 */
export interface LeftoverRow {
  thread_id: string;
  /** The thread record's creation time when it was recorded: a thread created again has another. */
  created_at: string;
}

/** The schema of the agent server's database. */
export interface AgentSchema extends DBSchema {
  threads: { key: string; value: ThreadRow; indexes: { seq: number } };
  runs: { key: string; value: RunRecord; indexes: { thread_id: string; status: RunRecord["status"] } };
  run_events: { key: [string, number]; value: RunEventRow };
  leftover_threads: { key: string; value: LeftoverRow };
}

const UPGRADES: readonly Upgrade<AgentSchema>[] = [
  (db) => void db.createObjectStore("threads", { keyPath: "thread_id" }).createIndex("seq", "seq"),
  (db) => {
    db.createObjectStore("runs", { keyPath: "run_id" }).createIndex("thread_id", "thread_id");
    db.createObjectStore("run_events", { keyPath: ["run_id", "id"] });
  },
  (db) => void db.createObjectStore("leftover_threads", { keyPath: "thread_id" }),
  // Runs by status: `runs.cancelMany` by status reads the few runs not ended, not every run's record
  // (runs are never pruned, their records stay: 2,000 finished ones were 2,002 records read per cancel).
  (_db, tx) => void tx.objectStore("runs").createIndex("status", "status"),
];

/** A connection (opened lazily) to the agent server's database `name`. */
export function openAgentDatabase(name: string, indexedDB: IDBFactory | undefined): Database<AgentSchema> {
  return new Database<AgentSchema>({ name, indexedDB, upgrades: UPGRADES });
}
