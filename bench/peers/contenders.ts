/**
 * The savers the peers suite compares, each opened on named storage, closed
 * and dropped the same way: ours, and the three peers (PGlite on idb://,
 * MemorySaver dumped to idb-keyval, sqlite-wasm on OPFS in a worker).
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { PgLiteSaver } from "@steerprotocol/langgraph-checkpoint-pglite";
import { IndexedDBSaver } from "../../src/index.js";
import { deleteDatabase } from "../harness.js";
import { KeyvalDumpSaver } from "./idb-keyval.js";
import { pgliteSaver } from "./pglite.js";
import { SqliteWasmSaver } from "./sqlite.js";

/** One saver of the comparison: how to open it on storage `name`, close it and delete that storage. */
export interface Contender {
  name: string;
  open(name: string): Promise<BaseCheckpointSaver>;
  close(saver: BaseCheckpointSaver): Promise<void>;
  drop(name: string): Promise<void>;
  /** true, or why the long-chat figures (300 turns of seeding) leave it out. */
  longChats: true | string;
}

const ours: Contender = {
  name: "ours",
  open: async (name) => new IndexedDBSaver({ dbName: name }),
  close: (saver) => (saver as IndexedDBSaver).close(),
  drop: deleteDatabase,
  longChats: true,
};

const sqlite: Contender = {
  name: "sqlite-wasm (OPFS, worker)",
  open: (name) => SqliteWasmSaver.open(`/${name}`),
  close: (saver) => (saver as SqliteWasmSaver).close(),
  drop: async (name) => (await SqliteWasmSaver.open(`/${name}`)).close(true),
  longChats: true,
};

const keyval: Contender = {
  name: "MemorySaver + idb-keyval dump",
  open: (name) => KeyvalDumpSaver.open(name),
  close: (saver) => (saver as KeyvalDumpSaver).close(),
  drop: deleteDatabase,
  longChats: true,
};

const pglite: Contender = {
  name: "PGlite saver (idb://, adapted)",
  open: (name) => pgliteSaver(`idb://${name}`),
  close: (saver) => (saver as PgLiteSaver).end(),
  // PGlite's IndexedDB file system keeps a database per data directory, named after it.
  drop: (name) => deleteDatabase(`/pglite/${name}`),
  // Its graph loop costs 10-70× ours per invoke (every query flushes its data directory to
  // IndexedDB), so 300 turns would take most of the run's time budget.
  longChats: "a turn costs 10-70× ours (see the graph loop); 300 turns exceed the run's time budget",
};

/** Ours first, then the peers. */
export const CONTENDERS: Contender[] = [ours, sqlite, keyval, pglite];
