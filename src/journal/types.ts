/**
 * The journal's public types and its error.
 */
import { IndexedDBCheckpointError, nameErrors } from "../core/errors.js";

/** Where the journal lives: `"opfs"` (browsers), `"memory"` (tests), `"off"`, or a custom backend. */
export type JournalOption = "opfs" | "memory" | "off" | JournalBackend;

/** What the saver found and did when it opened the database. */
export interface RecoveryReport {
  /**
   * - `"ok"`: nothing to do (a new database, or one up to date with its journal);
   * - `"restored"`: journal records the database had lost were re-applied;
   * - `"wiped"`: the database had been emptied (say, Chromium deleted it as corrupted)
   *   and there is no journal to restore it from: its data is gone;
   * - `"journal-unavailable"`: the journal could not be opened (another tab holds it,
   *   no OPFS): the saver runs without it.
   */
  kind: "ok" | "restored" | "wiped" | "journal-unavailable";
  /** True when the database was recreated empty after holding data. */
  fromEmpty: boolean;
  /** Transactions re-applied from the journal. */
  recoveredWrites: number;
  /** Transactions in the journal (after the last compaction). */
  journalRecords: number;
  /**
   * True when the journal ended in a record it could not use, skipped with
   * everything after it: torn by a crash (short, or failing its CRC), not
   * MessagePack, or crafted (naming a MessagePack extension the journal
   * never writes). The records before it were used.
   */
  tornRecord: boolean;
  /** Time spent checking and restoring, in ms. */
  elapsedMs: number;
  /** Why the journal is unavailable, or failed later. */
  error?: unknown;
}

/**
 * The database was found empty after it had held data (for instance Chromium
 * deleted it as corrupted after a crash) and no journal could restore it.
 * Thrown by the saver's first operation with `onWipe: "throw"`.
 */
export class DatabaseWipedError extends IndexedDBCheckpointError {
  constructor(readonly report: RecoveryReport) {
    super(
      `The IndexedDB database was emptied since it was last used (the browser may have deleted it after a crash); its checkpoints are lost. Enable the journal (journal: "opfs") to restore it next time.`,
    );
  }
}

nameErrors({ DatabaseWipedError });

/**
 * The file a journal lives in. Implementations: OPFS through a worker
 * (opfs-backend.ts) and memory (tests). Calls never overlap: the journal
 * queues them.
 */
export interface JournalBackend {
  /** Opens the journal and returns its current bytes (possibly with a torn tail). */
  open(): Promise<Uint8Array>;
  /** Cuts the file at `length` (drops a torn tail). */
  truncate(length: number): Promise<void>;
  /** Appends `bytes` and makes them durable before resolving. */
  append(bytes: Uint8Array): Promise<void>;
  /** Replaces the whole content with `bytes`, crash-safely (the old content survives a crash until the new is durable). */
  replace(bytes: Uint8Array): Promise<void>;
  /** Releases the file. */
  close(): Promise<void>;
}

/** A marker outside IndexedDB saying "this database has held data". */
export interface WipeMarker {
  has(): Promise<boolean>;
  set(): Promise<void>;
}
