/**
 * A crash journal for the saver's database, kept outside IndexedDB.
 *
 * Chromium can lose the last few committed IndexedDB transactions when the
 * browser is killed, and now and then deletes a corrupted origin database
 * whole on the next start. With a journal, every committed read-write
 * transaction is also appended (and flushed) to a file outside IndexedDB,
 * and before the first read the database is brought back up to date from it.
 *
 * How: {@link JournalSeam} plugs into the database's declared seam
 * (idb/database.ts `DatabaseSeam`): recovery runs before the connection's
 * first transaction, and every write request issued through idb's helpers is
 * recorded and, once its transaction has committed, appended as one record
 * (the exact rows, already serialized and encrypted). Replaying a journal
 * suffix is idempotent (puts and deletes are blind, inserts first-wins), so
 * recovery replays from a little before the newest record the database still
 * reflects. Compaction rewrites the journal as one snapshot of the database.
 * Without a journal, a marker outside IndexedDB still tells a database that
 * was wiped (recreated empty after it held data) from a new one.
 *
 * What lives in journal/: the seam (always loaded, small), the active journal
 * and its recovery (active.ts, raw.ts: loaded with import() only when a
 * journal is enabled), the record format, and the OPFS and memory backends.
 * It imports idb/ and core/, never saver/: the saver hands it its store list
 * and the resync of its newest rows.
 */
export {
  DatabaseWipedError,
  type JournalOption,
  type JournalBackend,
  type RecoveryReport,
  type WipeMarker,
} from "./types.js";
export { MemoryJournalBackend, resetMemoryJournals } from "./memory-backend.js";
export { defaultMarker, memoryMarker } from "./wipe-marker.js";
export { JournalSeam, type JournalSeamOptions } from "./seam.js";
export type { Resync, SchemaRules } from "./raw.js";
export { forgetDatabaseTraces, type ForgottenTraces } from "./forget.js";
