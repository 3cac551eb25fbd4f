/**
 * `langgraph-checkpoint-indexeddb/sync`: replicate an `IndexedDBSaver` with
 * a sync server (`langgraph-checkpoint-indexeddb/sync-server`). See docs/sync.md.
 *
 * @module
 */
export {
  SyncClient,
  type SyncClientOptions,
  type SyncNowOptions,
  type SyncState,
  type SyncStatus,
  type SyncStatusListener,
} from "./sync/client.js";
export type { SyncProgress, SyncResult } from "./sync/engine.js";
export type { SkippedThread } from "./sync/send.js";
export type { SyncProblem, SyncProblemCode } from "./sync/problems.js";
export { SyncError, type FetchLike } from "./sync/transport.js";
export {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  type PullResponse,
  type PushRequest,
  type PushResponse,
  type WireChange,
  type WireCheckpoint,
  type WireDelete,
  type WireRemoved,
  type WireThread,
} from "./sync/protocol.js";
