/**
 * The locks behind one-run-per-thread: their names; the lock managers
 * (Web Locks, or the in-process stand-in) live in core/locks.ts, which the
 * key changes of the saver and the store use too.
 */
import { crossTabName } from "../core/channel.js";

export { defaultLockManager, type RunLock, type RunLockManager, type RunLockOptions } from "../core/locks.js";
export { noteRunLocks } from "../core/run-locks.js";

/**
 * The Web Locks name that a run on `threadId` of database `dbName` holds:
 * `langgraph-checkpoint-indexeddb:v1:<dbName>:run:<threadId>`, each part
 * URI-encoded so that a `:` in a name cannot make two pairs collide. A runtime
 * contract: other code may query or request it.
 */
export function runLockName(dbName: string, threadId: string): string {
  return crossTabName({ kind: "run", dbName, threadId });
}
