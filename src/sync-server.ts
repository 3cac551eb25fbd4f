/**
 * `langgraph-checkpoint-indexeddb/sync-server`: the sync server (Node only).
 * Needs the optional peers `fastify`, `pg` and `@fastify/rate-limit`. See docs/sync.md.
 *
 * @module
 */
export {
  createSyncServer,
  type ListenOptions,
  type SyncServer,
  type SyncServerLimits,
  type SyncServerOptions,
} from "./sync-server/server.js";
export { SyncHttpError } from "./sync-server/store.js";
export { SyncServerSaver } from "./sync-server/saver.js";
export { SYNC_SCHEMA, setupSchema } from "./sync-server/schema.js";
