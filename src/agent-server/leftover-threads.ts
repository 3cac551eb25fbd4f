/**
 * The threads of thread-less runs (`on_completion: "delete"`) whose delete
 * failed once the run ended. The run reports the failure (stateless-runs.ts,
 * runs.ts); the thread is deleted again here, later, until a delete succeeds,
 * rather than left for good with its checkpoints.
 */

/** The first wait before a thread is deleted again; each failure doubles it, up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

/**
 * Deletes threads again after a failed delete: after 1 s, then twice as
 * long after each failure (at most a minute), while the server is open,
 * and once more when it closes.
 */
export class LeftoverThreads {
  readonly #delete: (threadId: string) => Promise<void>;
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Deletes under way, waited for at close. */
  readonly #deleting = new Set<Promise<void>>();
  #closed = false;

  constructor(deleteThread: (threadId: string) => Promise<void>) {
    this.#delete = deleteThread;
  }

  /** Deletes `threadId` again after `wait` ms, and on until a delete succeeds. */
  add(threadId: string, wait = RETRY_FIRST_MS): void {
    if (this.#closed) return;
    clearTimeout(this.#timers.get(threadId));
    const timer = setTimeout(() => {
      this.#timers.delete(threadId);
      this.#track(this.#delete(threadId).catch(() => this.add(threadId, Math.min(wait * 2, RETRY_MAX_MS))));
    }, wait);
    this.#timers.set(threadId, timer);
  }

  /** Deletes `threadId` no more: it was deleted (a thread created again under its id is another's). */
  forget(threadId: string): void {
    clearTimeout(this.#timers.get(threadId));
    this.#timers.delete(threadId);
  }

  /**
   * Stops the retries after one last delete of each thread left; one that
   * fails then stays (its run reported it; `threads.delete` deletes it).
   */
  async close(): Promise<void> {
    this.#closed = true;
    const left = [...this.#timers.keys()];
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    for (const threadId of left) this.#track(this.#delete(threadId).catch(() => undefined));
    while (this.#deleting.size > 0) await Promise.all(this.#deleting);
  }

  #track(deleting: Promise<void>): void {
    this.#deleting.add(deleting);
    void deleting.finally(() => this.#deleting.delete(deleting));
  }
}
