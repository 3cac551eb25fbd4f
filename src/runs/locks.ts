/**
 * The locks behind one-run-per-thread: their names; the lock managers
 * (Web Locks, or the in-process stand-in) live in core/locks.ts, which the
 * key changes of the saver and the store use too.
 */
export {
  InProcessLockManager,
  defaultLockManager,
  type RunLock,
  type RunLockManager,
  type RunLockOptions,
} from "../core/locks.js";

/** Why the lock names carry a version: a future layout must not mix with this one. */
const LOCK_PREFIX = "langgraph-checkpoint-indexeddb:v1";

/**
 * The Web Locks name that a run on `threadId` of database `dbName` holds:
 * `langgraph-checkpoint-indexeddb:v1:<dbName>:run:<threadId>`, each part
 * URI-encoded so that a `:` in a name cannot make two pairs collide. A runtime
 * contract: other code may query or request it.
 */
export function runLockName(dbName: string, threadId: string): string {
  return `${LOCK_PREFIX}:${encodeURIComponent(dbName)}:run:${encodeURIComponent(threadId)}`;
}
