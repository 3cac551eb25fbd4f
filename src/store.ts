/**
 * `langgraph-checkpoint-indexeddb/store`: the long-term memory store alone,
 * for apps that do not need the checkpoint saver.
 */
export { IndexedDBStore, DEFAULT_STORE_DB_NAME, type IndexedDBStoreParams } from "./store/index.js";
