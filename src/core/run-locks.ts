/**
 * The run lock of a thread as writers other than runs take it (copyThread,
 * importThread): through the default lock manager and through every manager
 * runs of the database were given (`runOnThread`'s `locks`) in this realm.
 * Apart from locks.ts so that savers that never copy do not load it.
 */
import { WebLockManager, defaultLockManager, type RunLockManager } from "./locks.js";

/** Realm-wide, like the fallback: the lock managers runs were given, by database name. */
const GIVEN_KEY = Symbol.for("langgraph-checkpoint-indexeddb:v1:run-lock-managers");

function givenManagers(dbName: string): Set<RunLockManager> {
  const holder = globalThis as unknown as Record<symbol, Map<string, Set<RunLockManager>> | undefined>;
  const byDb = (holder[GIVEN_KEY] ??= new Map());
  let managers = byDb.get(dbName);
  if (!managers) byDb.set(dbName, (managers = new Set()));
  return managers;
}

/**
 * Notes that a run on database `dbName` holds its thread through `locks`
 * (`runOnThread`'s option), so that {@link holdIfFree} asks it too: a copy
 * or an import through the default manager alone would not see that run
 * and would land under it. Kept for the realm's life (a manager or two).
 */
export function noteRunLocks(dbName: string, locks: RunLockManager): void {
  givenManagers(dbName).add(locks);
}

/**
 * Calls `work` holding the exclusive lock `name` through the default
 * manager and every manager runs on `dbName` were given in this realm, each
 * only if free right now (never waits: a caller inside a run of the thread
 * is refused instead of waiting for itself). Undefined, `work` not called,
 * when any of them is held.
 */
export function holdIfFree<T>(dbName: string, name: string, work: () => Promise<T>): Promise<{ value: T } | undefined> {
  const first = defaultLockManager();
  // The default manager given again (the same realm-wide fallback) would refuse its own nested request.
  const managers = [first, ...[...givenManagers(dbName)].filter((m) => m !== first && !sameWebLocks(m, first))];
  const hold = (i: number): Promise<{ value: T } | undefined> =>
    i === managers.length
      ? work().then((value) => ({ value }))
      : managers[i]!.request(name, { ifAvailable: true }, async (lock) => (lock ? hold(i + 1) : undefined));
  return hold(0);
}

/** True when both adapt the same browser `LockManager`. */
function sameWebLocks(a: RunLockManager, b: RunLockManager): boolean {
  return a instanceof WebLockManager && b instanceof WebLockManager && a.locks === b.locks;
}
