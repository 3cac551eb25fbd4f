/**
 * The saver's public option and result types.
 */
import type { CheckpointMetadata, CheckpointPendingWrite, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { IndexedDBCheckpointError } from "../core/errors.js";
import type { Durability } from "../idb/database.js";
import type { JournalOption, RecoveryReport } from "../journal/index.js";

/** Options of `new IndexedDBSaver(...)`; every field is optional. */
export interface IndexedDBSaverParams {
  /** IndexedDB database name. Default `"langgraph"`. */
  dbName?: string;
  /** Serializer for every stored value. Default {@link MsgpackSerializer}. */
  serde?: SerializerProtocol;
  /** The `IDBFactory` to use. Default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
  /** IndexedDB durability hint for write transactions. Default `"default"`. */
  durability?: Durability;
  /** How long an open blocked by another tab waits before `DatabaseBlockedError`. Default 10 s. */
  blockedTimeoutMs?: number;
  /**
   * A crash journal outside IndexedDB: `"opfs"` appends every committed write
   * to the Origin Private File System and restores a wiped or lagging
   * database from it before the first read (see docs/journal.md). Default `"off"`.
   */
  journal?: JournalOption;
  /** Told once, on open, what was recovered (or that the database was wiped). */
  onRecovery?: (report: RecoveryReport) => void;
  /** `"throw"`: operations reject with `DatabaseWipedError` when a wiped database could not be restored. Default `"report"`. */
  onWipe?: "report" | "throw";
  /**
   * `getTuple` of a namespace's latest checkpoint, and `list` of one
   * namespace (its newest checkpoints), answered from memory while provably
   * current: this saver holds the database's write lease, so no other tab
   * or saver can have written since (see docs/fresh-reads.md).
   * Default `true`; `false` reads IndexedDB every time.
   */
  freshReads?: boolean;
}

/**
 * A channel that can rebuild a delta channel's value from its history:
 * LangGraph's `DeltaChannel` (pass `graph.channels`).
 */
export interface DeltaChannelLike {
  fromCheckpoint(checkpoint: unknown): { replayWrites(writes: CheckpointPendingWrite[]): void; get(): unknown };
}

/** True for a channel object that can replay delta writes. @internal */
export function isDeltaChannelLike(channel: unknown): channel is DeltaChannelLike {
  const candidate = channel as (Partial<DeltaChannelLike> & { replayWrites?: unknown }) | null;
  return typeof candidate?.fromCheckpoint === "function" && typeof candidate.replayWrites === "function";
}

/** Options of {@link IndexedDBSaver.prune}. */
export interface PruneOptions {
  /** `"keep_latest"` (default) or `"delete"`. */
  strategy?: "keep_latest" | "delete";
  /** How many newest checkpoints per namespace `"keep_latest"` keeps. Default 1. */
  keepLast?: number;
  /**
   * The graph's channels (`graph.channels`), to snapshot delta channels
   * instead of keeping their history. Channels that are not delta channels
   * are ignored.
   */
  channels?: Record<string, unknown>;
}

/** Options of {@link IndexedDBSaver.deleteForRuns}. */
export interface DeleteForRunsOptions {
  /**
   * Only this thread's checkpoints: run ids are the app's to choose and may
   * repeat across threads, so rolling one run back must not reach the others.
   */
  threadId?: string;
  /**
   * The graph's channels (`graph.channels`): a checkpoint left whose parent
   * is deleted gets a `DeltaSnapshot` of each delta channel without the
   * deleted runs' writes, so later checkpoints keep the history before them.
   * Without it a delta channel's history starts after the gap. Channels that
   * are not delta channels are ignored.
   */
  channels?: Record<string, unknown>;
}

/** Options of {@link IndexedDBSaver.listThreads}. */
export interface ListThreadsOptions {
  limit?: number;
  offset?: number;
  /** Only threads updated strictly before this time (ms since the epoch). */
  before?: number;
  /** Strict equality on the metadata of each thread's latest checkpoint. */
  filter?: Record<string, unknown>;
  /**
   * `false`: list without `checkpointCount`, which is the one part of a
   * listing that costs in proportion to the threads' checkpoints (a walk
   * over each thread's rows); the rest costs what the page asks. Default
   * `true`.
   */
  count?: boolean;
}

/** One thread, as {@link IndexedDBSaver.listThreads} lists it (with `count: false`, no `checkpointCount`). */
export interface ListedThread {
  threadId: string;
  /** When its first checkpoint was put (ms since the epoch). */
  createdAt: number;
  /** When a checkpoint was last put, copied or removed (ms since the epoch). */
  updatedAt: number;
  /** The newest root checkpoint's id. */
  latestCheckpointId?: string;
  /** That checkpoint's metadata. */
  metadata?: CheckpointMetadata;
  /**
   * Checkpoints in all namespaces, counted when listed (a walk over the
   * thread's rows: about 2 µs each in Chromium); absent with `count: false`.
   */
  checkpointCount?: number;
  /**
   * Set when the thread's latest checkpoint cannot be read (its row or
   * summary altered outside the saver, half written by an old version, or
   * sealed under another key): a `SerializationError` or `DecryptionError`
   * naming the row. The thread is still listed, without `metadata`, so one
   * bad row hides no other thread and the app can offer to export or delete
   * it; nothing is deleted. With a `filter` it is left out: its metadata
   * cannot be compared.
   */
  error?: IndexedDBCheckpointError;
}

/** One thread, as {@link IndexedDBSaver.listThreads} lists it when it counts (the default). */
export interface ThreadInfo extends ListedThread {
  checkpointCount: number;
}
