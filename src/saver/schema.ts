/**
 * The saver's database: its object stores, row shapes and numbered upgrades.
 *
 * Rows keep ids, parent links, run ids and channel versions as plain fields
 * (they are keys or index keys, and the history walk reads them inside one
 * transaction); every value LangGraph gives us (checkpoint, metadata, channel
 * values, pending writes) is stored as `[type, bytes]` from the serializer,
 * so an encrypting serializer covers all of them.
 */
import type { DBSchema } from "idb";
import type { Upgrade } from "../idb/database.js";
import { issue } from "../idb/requests.js";

/** A serialized value: the serializer's type tag and its bytes. */
export type TypedBytes = [type: string, data: Uint8Array];

/** A channel version as LangGraph hands it over. */
export type Version = string | number;

/** One checkpoint, without its channel values (those live in `blobs`). */
export interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  /** The checkpoint it was put on top of (`config.configurable.checkpoint_id`). */
  parent_checkpoint_id?: string;
  /**
   * Row binding version 3 (encrypting serializers only): a SHA-256 over this
   * row's id, parent link and channel versions and its parent's `chain`, 64
   * lowercase hex characters, also sealed with the checkpoint. Walks up the
   * parent chain check links by hashing instead of decrypting every
   * ancestor (see saver/chain.ts). Absent on binding version 1 and 2 rows.
   */
  chain?: string;
  /** The checkpoint with `channel_values` removed. */
  checkpoint: TypedBytes;
  metadata: TypedBytes;
  /**
   * Versions of the channels that have a stored value at this checkpoint, a
   * plain copy so one read transaction can fetch the blobs (the authoritative
   * copy is inside `checkpoint`).
   */
  channel_versions: Record<string, Version>;
  /** `metadata.run_id`, indexed for `deleteForRuns`. */
  run_id?: string;
  /** When this row was first written (ms since the epoch). */
  created_at: number;
}

/** One channel's value at one version. Versions without a value have no row. */
export interface BlobRow {
  thread_id: string;
  checkpoint_ns: string;
  channel: string;
  version: Version;
  value: TypedBytes;
}

/** One pending write of a task against a checkpoint. */
export interface WriteRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  /** Position in the task's write list, or the negative slot of a special channel. */
  idx: number;
  channel: string;
  value: TypedBytes;
  /** The task's path, for `writesSortKey` order ("" when not given). */
  task_path: string;
  /** Only on a thread's tombstone copy (see {@link tombstoneWrite}). */
  tombstone?: Tombstone;
  /** Only on the key-id copy (see {@link keyIdWrite}). */
  key_id?: string;
}

/** Marks a deleted thread so late writes of a run still in flight stay dropped. */
export interface Tombstone {
  /** Checkpoint ids up to this one (string order) belonged to the deleted thread. */
  max_deleted_id: string;
  /** Checkpoints a late `put` tried to add after the delete; their writes are dropped too. */
  dropped: string[];
  deleted_at: number;
}

/**
 * Per-thread summary for `listThreads`, written blind (no read first) by
 * every root-namespace put, so a put costs one round trip. What would need a
 * read-modify-write (creation time, checkpoint count) is derived when listing.
 */
export interface ThreadRow {
  thread_id: string;
  updated_at: number;
  /** The root checkpoint put last: its id and serialized metadata. */
  latest?: { checkpoint_ns: string; checkpoint_id: string; metadata: TypedBytes };
}

/** What the `meta` record names of tombstones start with: the thread id follows. */
const TOMBSTONE_PREFIX = "tombstone\u0000";

/** The `meta` record name of a thread's tombstone (the copy `put` reads). */
export function tombstoneName(threadId: string): string {
  return `${TOMBSTONE_PREFIX}${threadId}`;
}

/** The thread whose tombstone the `meta` record `name` is (see {@link tombstoneName}). */
export function tombstoneThread(name: string): string {
  return name.slice(TOMBSTONE_PREFIX.length);
}

/** Bounds of every tombstone's `meta` record name: the prefix, up to the next code unit after its U+0000. */
export const TOMBSTONE_NAMES = { lower: TOMBSTONE_PREFIX, upper: "tombstone\u0001" } as const;

/**
 * The namespace of a thread's tombstone copy in the `writes` store. No real
 * namespace starts with U+0000, and it sorts before them all but the root's.
 */
export const TOMBSTONE_NS = "\u0000tombstone";

/**
 * The tombstone copy `putWrites` reads. A second copy in `writes` keeps
 * `putWrites` transactions to the `writes` store alone, so they never wait
 * for a `put` of the same run (IndexedDB runs read-write transactions with
 * disjoint stores side by side).
 */
export function tombstoneWrite(threadId: string, tombstone: Tombstone): WriteRow {
  return {
    thread_id: threadId,
    checkpoint_ns: TOMBSTONE_NS,
    checkpoint_id: "",
    task_id: "",
    idx: 0,
    channel: TOMBSTONE_NS,
    task_path: "",
    value: ["tombstone", new Uint8Array(0)],
    tombstone,
  };
}

/** The key of a thread's tombstone copy in `writes`. */
export function tombstoneWriteKey(threadId: string): [string, string, string, string, number] {
  return [threadId, TOMBSTONE_NS, "", "", 0];
}

/**
 * The copy of the database's current data key id that `putWrites` checks
 * in its own transaction (see {@link keyIdWrite}): in the tombstone
 * namespace under the empty thread id, which no thread has, so every reader
 * skips it as it skips tombstone copies.
 */
export const KEY_ID_WRITE_KEY: [string, string, string, string, number] = ["", TOMBSTONE_NS, "", "", 0];

/**
 * The key-id copy, written with every key record: like the tombstone copy,
 * it keeps `putWrites` on the `writes` store alone while it checks that the
 * key its values were sealed under is still the database's.
 */
export function keyIdWrite(keyId: string): WriteRow {
  const [thread_id, checkpoint_ns, checkpoint_id, task_id, idx] = KEY_ID_WRITE_KEY;
  const value: TypedBytes = ["key", new Uint8Array(0)];
  return {
    thread_id,
    checkpoint_ns,
    checkpoint_id,
    task_id,
    idx,
    channel: checkpoint_ns,
    task_path: "",
    value,
    key_id: keyId,
  };
}

/** True for a tombstone copy or the key-id copy, which thread-wide reads of `writes` skip. */
export function isTombstoneWrite(row: WriteRow): boolean {
  return row.checkpoint_ns === TOMBSTONE_NS;
}

/** A small named record: format version, the serializer's key record, tombstones. */
export interface MetaRow {
  name: string;
  value: unknown;
}

/** The saver's IndexedDB schema, for idb's typed wrappers. */
export interface SaverSchema extends DBSchema {
  checkpoints: {
    key: [string, string, string];
    value: CheckpointRow;
    indexes: {
      by_run: string;
      by_parent: [string, string, string];
      by_thread_checkpoint: [string, string];
      by_checkpoint: string;
    };
  };
  blobs: {
    key: [string, string, string, Version];
    value: BlobRow;
  };
  writes: {
    key: [string, string, string, string, number];
    value: WriteRow;
    indexes: { by_channel: [string, string, string, string] };
  };
  threads: {
    key: string;
    value: ThreadRow;
    indexes: { by_updated: number };
  };
  meta: {
    key: string;
    value: MetaRow;
  };
}

/** Object store names of the saver's database. */
export type SaverStoreName = "checkpoints" | "blobs" | "writes" | "threads" | "meta";

/** Every store of the saver's database, in the order the journal snapshots them. */
export const SAVER_STORE_NAMES: readonly SaverStoreName[] = ["checkpoints", "blobs", "writes", "threads", "meta"];

/**
 * The schema steps; the database version is their count. Never edit a
 * released step: append a new one.
 */
export const SAVER_UPGRADES: readonly Upgrade<SaverSchema>[] = [
  // 1: the initial layout.
  (db, tx) => {
    const checkpoints = db.createObjectStore("checkpoints", {
      keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id"],
    });
    checkpoints.createIndex("by_run", "run_id");
    // Children of a checkpoint: which of them still use a blob it introduced.
    checkpoints.createIndex("by_parent", ["thread_id", "checkpoint_ns", "parent_checkpoint_id"]);
    db.createObjectStore("blobs", { keyPath: ["thread_id", "checkpoint_ns", "channel", "version"] });
    const writes = db.createObjectStore("writes", {
      keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
    });
    // The writes index: one channel's writes across checkpoints, for the delta-history walk.
    writes.createIndex("by_channel", ["thread_id", "checkpoint_ns", "channel", "checkpoint_id"]);
    const threads = db.createObjectStore("threads", { keyPath: "thread_id" });
    threads.createIndex("by_updated", "updated_at");
    db.createObjectStore("meta", { keyPath: "name" });
    issue(tx.objectStore("meta").put({ name: "format", value: SAVER_FORMAT }));
  },
  // 2: thread-wide and cross-thread `list` newest first, reading no more rows
  // than asked. Both index fields every row already has, so the rows (and the
  // "format" record) stay as they are; building them reads every checkpoint once.
  (_db, tx) => {
    const checkpoints = tx.objectStore("checkpoints");
    checkpoints.createIndex("by_thread_checkpoint", ["thread_id", "checkpoint_id"]);
    checkpoints.createIndex("by_checkpoint", "checkpoint_id");
  },
  // 3: no change to the stores. An encrypting saver now writes row binding
  // version 3 (a `chain` per checkpoint row, chain.ts), which versions of
  // this package before it cannot open: they would report every such row
  // as altered. Opening at version 3 makes them refuse the database as
  // "written by a newer version of this package" instead.
  () => {},
];

/** Version of the row format inside the stores, kept in `meta` as "format". */
export const SAVER_FORMAT = 1;
