/**
 * The one place the demo imports the package from: the library's public
 * entry, from source, as an app would import "langgraph-checkpoint-indexeddb".
 */
export {
  IndexedDBSaver,
  IndexedDBStore,
  EncryptedSerializer,
  DecryptionError,
  ThreadFileError,
  exportThread,
  importThread,
  copyThreads,
  THREAD_EXPORT_EXTENSION,
  runOnThread,
  watchThreadRunning,
  isThreadRunning,
  interruptWith,
} from "../../src/index.js";
export { SyncClient, type SyncStatus } from "../../src/sync.js";
