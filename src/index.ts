/**
 * langgraph-checkpoint-indexeddb: LangGraph.js persistence in the browser.
 * Re-exports only; each module has one job (see README, "Layout").
 */
export {
  IndexedDBSaver,
  type IndexedDBSaverParams,
  type PruneOptions,
  type ListThreadsOptions,
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
  type BlobRecord,
  type CheckpointRecord,
} from "./portable/index.js";
export {
  EncryptedSerializer,
  inspectEnvelope,
  AES_GCM_SUFFIX,
  DEFAULT_PBKDF2_ITERATIONS,
  type EncryptedSerializerOptions,
  type PassphraseOptions,
  type AesGcmKeyRecord,
  type WrappedDataKey,
  type EnvelopeInfo,
} from "./serde/encrypted/index.js";
export type { Durability } from "./idb/database.js";
export {
  DatabaseWipedError,
  MemoryJournalBackend,
  type JournalOption,
  type JournalBackend,
  type RecoveryReport,
  type WipeMarker,
} from "./journal/index.js";
export type {
  RowRef,
  RowBoundSerializer,
  DatabaseKeyedSerializer,
  DatabaseBinding,
  KeyRecord,
} from "./serde/protocol.js";
export type {
  KeyRecordAccess,
  RewrappableSerializer,
  RekeyableSerializer,
  DataKeyRotation,
  ChangeKeyOptions,
  StoredValue,
  ValueRewriter,
} from "./serde/rekey.js";
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
export { runLockName, type RunLockManager, type RunLock, type RunLockOptions } from "./runs/locks.js";
export { runChannelName } from "./runs/signals.js";
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
