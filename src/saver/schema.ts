/**
 * The saver's database: its object stores, indexes and numbered upgrades.
 * The rows they hold are shaped in rows/shapes.ts (shared with the sync
 * server and export, which open no IndexedDB).
 */
import type { DBSchema } from "idb";
import type { Upgrade } from "../idb/database.js";
import { issue } from "../idb/requests.js";
import type { BlobRow, CheckpointRow, MetaRow, ThreadRow, ValueKey, WriteRow } from "../rows/shapes.js";

/** The saver's IndexedDB schema, for idb's typed wrappers. */
export interface SaverSchema extends DBSchema {
  checkpoints: {
    key: [string, string, string];
    value: CheckpointRow;
    indexes: {
      by_run: string;
      by_thread_checkpoint: [string, string];
      by_checkpoint: string;
      by_created: number;
      by_value: ValueKey;
      by_absent: ValueKey;
    };
  };
  blobs: {
    key: ValueKey;
    value: BlobRow;
  };
  writes: {
    key: [string, string, string, string, number];
    value: WriteRow;
    indexes: { by_channel: [string, string, string, string]; by_written: number };
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
    // Children of a checkpoint. Step 6 deletes it, so SaverSchema does not name it.
    checkpoints.createIndex("by_parent" as never, ["thread_id", "checkpoint_ns", "parent_checkpoint_id"]);
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
  // 4: three things, one step (one release). Row format 2: a checkpoint
  // row may hold the small values of the channel versions it introduced
  // (`inline`); `by_value` over their blob keys finds the row holding a value
  // an ancestor introduced in one read. Format 1 rows have no `inline_keys`
  // and are not indexed: no row is rewritten, so there is nothing to
  // half-upgrade (the step runs in the version change transaction: all or
  // nothing). What changed since a time, for sync's rounds
  // (sync/changes.ts): a checkpoint row's `created_at` and a pending write's
  // `written_at` are stamped in the transaction that stores them, so a round
  // reads the rows stamped since its last scan instead of every thread; rows
  // written before carry no `written_at`, and the first round after this step
  // scans everything once, as every round did before. Row binding version 4
  // (`parent_writes` on each checkpoint row an encrypting saver writes,
  // hashed into its chain: chain.ts). Older versions of this package open at
  // version 3 and refuse this database by its version, which they must: they
  // would misread inline values, store writes without the stamp (sync would
  // never see them) and hash version-4 chains without the list.
  (_db, tx) => {
    tx.objectStore("checkpoints").createIndex("by_value", "inline_keys", { multiEntry: true });
    tx.objectStore("checkpoints").createIndex("by_created", "created_at");
    tx.objectStore("writes").createIndex("by_written", "written_at");
  },
  // 5: a checkpoint row may list the channel versions it has that have no
  // stored value (`absent_keys`), so the latest read asks for nothing that
  // is not there; `by_absent` over them finds the rows to take a key off
  // when a value is stored at a listed version later (prune's delta
  // snapshot, a blob sync pulls: saver/absent.ts). No row is rewritten
  // (rows without the list read every version, as before) and the index
  // starts empty. Row format stays 2: the field only says what is not
  // there, so an older version would read these rows right, but its prune
  // and sync pull would store a listed value without taking the key off,
  // and this version would then miss that value: older versions open at 4
  // and refuse this database by its version.
  (_db, tx) => {
    tx.objectStore("checkpoints").createIndex("by_absent", "absent_keys", { multiEntry: true });
  },
  // 6: `by_parent` goes. No code reads it (the prune of blobs it was made
  // for reads a thread's rows whole), yet every put wrote an entry, and the
  // entries took about 16% of the bytes a 200-turn chat left on disk
  // (docs/benchmarks.md, "Schema 6"). No row changes; deleting an index in
  // the version change transaction is all or nothing. Versions before this
  // one open at 5 and refuse the database by its version: they would not
  // miss the index (none read it), but IndexedDB cannot open a database at
  // an older version.
  (_db, tx) => {
    tx.objectStore("checkpoints").deleteIndex("by_parent");
  },
];

/**
 * Version of the row format inside the stores, kept in `meta` as "format":
 * 2 once a checkpoint row holds values inline (written in that row's
 * transaction). Format 1 rows (every value in `blobs`) still read.
 */
export const SAVER_FORMAT = 2;

/**
 * The largest serialized value (bytes) a format 2 row keeps inline, and the
 * most a row keeps inline in all: above them a value gets a blob row.
 * Measured (bench/suites/inline-threshold.ts, docs/benchmarks.md): inline
 * saves 10-20% of a put up to 8 KiB, while every read of the row that does
 * not want its values (a `list` page, a parent walk) pays for them from 4 KiB.
 */
export const INLINE_MAX = 2048;
/** See {@link INLINE_MAX}. */
export const INLINE_ROW_MAX = 6144;

/**
 * Whether a `meta` "format" record (`value`) names a newer row format than
 * this code reads: such a database is refused (serde/failures.ts `newerFormatMessage`). A
 * later format may keep the schema version and rewrite rows in place, so
 * opening at the same version proves nothing, and rows of a format this code
 * misreads would be reported as altered or, worse, overwritten in the old
 * shape. Any other value (none, or one altered outside the saver, which no
 * version writes) is left to the row checks, so the rows still read.
 */
export function isNewerFormat(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value > SAVER_FORMAT;
}
