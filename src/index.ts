/**
 * langgraph-checkpoint-indexeddb: LangGraph.js persistence in the browser.
 * Re-exports only; each module has one job (see README, "Layout").
 */
export { IndexedDBSaver, type IndexedDBSaverParams } from "./saver.js";
export { MsgpackSerializer } from "./msgpack.js";
export type { Durability } from "./db.js";
export type { RowRef, RowBoundSerializer, DatabaseKeyedSerializer, DatabaseBinding, KeyRecord } from "./binding.js";
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
