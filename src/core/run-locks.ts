/**
 * The run lock of a thread as writers other than runs take it (copyThread,
 * importThread): through the default lock manager and through every manager
 * runs of the database were given (`runOnThread`'s `locks`) in this realm.
 * Apart from locks.ts so that savers that never copy do not load it.
 *
 * A manager is listed only while a run holds or waits for a thread through
 * it: a lock taken through a manager no run uses any more is no run's, and
 * an app that makes one manager per run would otherwise list every one for
 * the page's life, each asked at every copy. Counted rather than held weakly:
 * a manager the app keeps would stay listed, and a weak one goes only when
 * the collector says so.
 */
import { WebLockManager, defaultLockManager, type RunLockManager } from "./locks.js";

/** Realm-wide, like the fallback: the lock managers runs were given, by database name. */
const GIVEN_KEY = Symbol.for("langgraph-checkpoint-indexeddb:v1:run-lock-managers");

/**
 * Realm-wide too: how many runs of each database use each manager listed by
 * a copy that counts (this build on). A manager listed without a count was
 * listed by an earlier build, which never removes it: it stays so.
 */
const USES_KEY = Symbol.for("langgraph-checkpoint-indexeddb:v1:run-lock-manager-uses");

function usesOf(dbName: string): Map<RunLockManager, number> {
  const holder = globalThis as unknown as Record<symbol, Map<string, Map<RunLockManager, number>> | undefined>;
  const byDb = (holder[USES_KEY] ??= new Map());
  let uses = byDb.get(dbName);
  if (!uses) byDb.set(dbName, (uses = new Map()));
  return uses;
}

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
 * and would land under it. Returns the release, called once the run has
 * let its thread go: with no run of the database left on it, it is no
 * longer asked.
 */
export function noteRunLocks(dbName: string, locks: RunLockManager): () => void {
  const managers = givenManagers(dbName);
  const uses = usesOf(dbName);
  const count = uses.get(locks);
  // Listed by an earlier build, without a count: left as it keeps it.
  if (count === undefined && managers.has(locks)) return () => undefined;
  managers.add(locks);
  uses.set(locks, (count ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (uses.get(locks) ?? 1) - 1;
    if (left > 0) return void uses.set(locks, left);
    uses.delete(locks);
    managers.delete(locks);
  };
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
