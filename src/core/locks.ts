/**
 * Exclusive locks shared by an origin's tabs, iframes and workers: the Web
 * Locks API (`navigator.locks`), which the browser releases when the
 * document or worker holding a lock goes away, or, where it is missing
 * (Node, old browsers), an in-process stand-in with the same queueing rules
 * that coordinates only the code of one JavaScript realm. Used for one run
 * per thread (runs/) and for one key change at a time (rekey, changeKey).
 */

/** A lock as the callback of {@link RunLockManager.request} sees it. */
export interface RunLock {
  readonly name: string;
}

/** Options of {@link RunLockManager.request}: always exclusive. */
export interface RunLockOptions {
  /** Grant only if free right now; otherwise call back with `null`. */
  ifAvailable?: boolean;
  /** Stop waiting (rejects with an `AbortError`). */
  signal?: AbortSignal;
}

/** The part of the Web Locks `LockManager` the run coordinator uses. */
export interface RunLockManager {
  /**
   * Waits for the exclusive lock `name` (first come, first served), calls
   * `callback` while holding it, and releases it once the callback's promise
   * settles; resolves or rejects as the callback did.
   */
  request<T>(name: string, options: RunLockOptions, callback: (lock: RunLock | null) => Promise<T>): Promise<T>;
  /** The names of the locks held and waited for right now. */
  query(): Promise<{ held: string[]; pending: string[] }>;
}

/** Adapts the browser's `LockManager`. @internal */
export class WebLockManager implements RunLockManager {
  constructor(readonly locks: LockManager) {}

  request<T>(name: string, options: RunLockOptions, callback: (lock: RunLock | null) => Promise<T>): Promise<T> {
    // Web Locks refuse `signal` together with `ifAvailable` (NotSupportedError);
    // an `ifAvailable` request never waits, so there is nothing to abort.
    const { ifAvailable, signal } = options;
    const lockOptions: LockOptions = ifAvailable
      ? { mode: "exclusive", ifAvailable }
      : { mode: "exclusive", ...(signal ? { signal } : {}) };
    // The DOM typing says Promise<T> for a callback returning T; the spec resolves the promise.
    return this.locks.request(name, lockOptions, (lock) =>
      callback(lock && { name: lock.name }),
    ) as unknown as Promise<T>;
  }

  async query(): Promise<{ held: string[]; pending: string[] }> {
    const snapshot = await this.locks.query();
    const names = (infos: LockInfo[] | undefined) =>
      (infos ?? [])
        .filter((info) => info.mode !== "shared")
        .flatMap((info) => (info.name === undefined ? [] : [info.name]));
    return { held: names(snapshot.held), pending: names(snapshot.pending) };
  }
}

interface Waiter {
  grant(): void;
}

/**
 * Exclusive locks with a FIFO queue per name, for one JavaScript realm. Web
 * Locks semantics where they matter here: `ifAvailable` fails while the lock
 * is held or anyone waits for it, the lock is released after the callback's
 * promise settles and before `request` resolves, and an aborted wait rejects
 * with an `AbortError`.
 * @internal exported for tests
 */
export class InProcessLockManager implements RunLockManager {
  readonly #held = new Set<string>();
  readonly #queues = new Map<string, Waiter[]>();

  async request<T>(name: string, options: RunLockOptions, callback: (lock: RunLock | null) => Promise<T>): Promise<T> {
    const { signal, ifAvailable } = options;
    if (signal?.aborted) throw abortError(signal);
    const free = !this.#held.has(name) && (this.#queues.get(name)?.length ?? 0) === 0;
    if (!free && ifAvailable) return callback(null);
    if (!free) await this.#wait(name, signal);
    this.#held.add(name);
    try {
      return await callback({ name });
    } finally {
      this.#release(name);
    }
  }

  async query(): Promise<{ held: string[]; pending: string[] }> {
    const pending = [...this.#queues].flatMap(([name, queue]) => queue.map(() => name));
    return { held: [...this.#held], pending };
  }

  #wait(name: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const queue = this.#queues.get(name) ?? [];
      this.#queues.set(name, queue);
      const onAbort = () => {
        const index = queue.indexOf(waiter);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0) this.#queues.delete(name);
        reject(abortError(signal!));
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #release(name: string): void {
    this.#held.delete(name);
    const queue = this.#queues.get(name);
    const next = queue?.shift();
    if (queue?.length === 0) this.#queues.delete(name);
    if (next) {
      // Mark it held at once, so that no `ifAvailable` request slips in
      // between this release and the waiter's continuation.
      this.#held.add(name);
      next.grant();
    }
  }
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The lock request was aborted.", "AbortError");
}

/** One fallback per realm, shared by every copy of this module loaded in it. */
const FALLBACK_KEY = Symbol.for("langgraph-checkpoint-indexeddb:v1:in-process-locks");

/**
 * `navigator.locks` when the environment has it, else the realm-wide
 * in-process fallback.
 */
export function defaultLockManager(): RunLockManager {
  const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
  if (locks) return new WebLockManager(locks);
  const holder = globalThis as unknown as Record<symbol, RunLockManager | undefined>;
  return (holder[FALLBACK_KEY] ??= new InProcessLockManager());
}
