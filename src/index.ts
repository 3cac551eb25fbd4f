/**
 * langgraph-checkpoint-indexeddb: LangGraph.js persistence in the browser.
 * What an app uses; re-exports only. Plumbing for extending the package sits
 * in subpaths: `./serde` (the serializer protocol, the encrypted format),
 * `./runs` (runOnThread's lock and channel names), `./journal` (journal
 * backends). See docs/layout.md.
 */
export {
  IndexedDBSaver,
  type IndexedDBSaverParams,
  type PruneOptions,
  type DeleteForRunsOptions,
  type ListThreadsOptions,
  type ListedThread,
  type ThreadInfo,
  type DeltaChannelLike,
} from "./saver/index.js";
export type { CheckpointChange, ChangeKind, ChangeListener } from "./saver/events.js";
export { IndexedDBStore, DEFAULT_STORE_DB_NAME, type IndexedDBStoreParams } from "./store/index.js";
export { MsgpackSerializer } from "./serde/msgpack/index.js";
export {
  exportThread,
  exportThreadStream,
  importThread,
  copyThreads,
  validateThreadExport,
  readThreadExportHeader,
  ThreadFileError,
  ThreadExportError,
  ThreadImportError,
  THREAD_EXPORT_FORMAT,
  THREAD_EXPORT_VERSION,
  THREAD_EXPORT_MEDIA_TYPE,
  THREAD_EXPORT_EXTENSION,
  type ThreadExport,
  type ThreadExportInput,
  type ThreadExportHeader,
  type ThreadExportCounts,
  type ThreadExportTrailer,
  type ThreadTransferProgress,
  type ExportThreadOptions,
  type ImportThreadOptions,
  type ImportThreadResult,
  type IfThreadExists,
  type CopyThreadsOptions,
  type CopyThreadsProgress,
  type CopyThreadsResult,
} from "./portable/index.js";
export {
  EncryptedSerializer,
  DEFAULT_PBKDF2_ITERATIONS,
  type EncryptedSerializerOptions,
  type PassphraseOptions,
} from "./serde/encrypted/index.js";
export type { ChangeKeyOptions } from "./serde/rekey.js";
export type { Durability } from "./idb/database.js";
export { DatabaseWipedError, type JournalOption, type RecoveryReport } from "./journal/index.js";
export {
  runOnThread,
  isThreadRunning,
  watchThreadRunning,
  type MultitaskStrategy,
  type RunOnThreadOptions,
  type ThreadRunningOptions,
  type WatchThreadRunningOptions,
  type InvokableGraph,
  type RunSaver,
} from "./runs/coordinator.js";
export { ThreadBusyError, RunInterruptedError } from "./runs/errors.js";
export { interruptWith, UnsupportedLangGraphError, SUPPORTED_LANGGRAPH } from "./interrupt/index.js";
export {
  IndexedDBCheckpointError,
  DatabaseBlockedError,
  DatabaseClosedError,
  DecryptionError,
  KeyChangedError,
  SerializationError,
  QuotaExceededError,
  IndexedDBUnavailableError,
  isQuotaError,
} from "./core/errors.js";
