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
} from "./saver.js";
export type { CheckpointChange, ChangeKind, ChangeListener } from "./events.js";
export { IndexedDBStore, DEFAULT_STORE_DB_NAME, type IndexedDBStoreParams } from "./store.js";
export { MsgpackSerializer } from "./msgpack.js";
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
} from "./encrypted.js";
export type { Durability } from "./db.js";
export type {
  RowRef,
  RowBoundSerializer,
  DatabaseKeyedSerializer,
  DatabaseBinding,
  KeyRecord,
  KeyRecordAccess,
  RewrappableSerializer,
  RekeyableSerializer,
  DataKeyRotation,
  StoredValue,
  ValueRewriter,
} from "./binding.js";
export {
  IndexedDBCheckpointError,
  DatabaseBlockedError,
  DatabaseClosedError,
  DecryptionError,
  SerializationError,
  QuotaExceededError,
  IndexedDBUnavailableError,
  isQuotaError,
} from "./errors.js";
