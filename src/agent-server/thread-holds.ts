/**
 * Holding a thread as a run would, for work that is not a run: a thread's
 * delete, a run's delete, a state update. Each holds the thread's run lock
 * through `runOnThread`, so no run starts on the thread meanwhile, here or in
 * another tab; {@link IdleHolds} keeps this server's holds of a thread in
 * turn, and says which threads it holds, so that they are not taken for runs.
 */
import { runOnThread, type RunSaver } from "../runs/coordinator.js";
import { RunInterruptedError, ThreadBusyError } from "../runs/errors.js";
import type { RunLockManager } from "../runs/locks.js";

/** What a hold needs: the saver (its `dbName` scopes the lock) and the lock manager. */
export interface HoldContext {
  saver: RunSaver;
  locks: RunLockManager;
}

/**
 * `work`'s result, run holding `threadId`'s run lock as a run would
 * (`runOnThread`). Once `work` has finished, a newer run (interrupt or
 * rollback strategy) asking for the thread fails the hold after the fact:
 * `work` did not watch the stop, and what it wrote stays (helper-51,
 * helper-56: answered 500 though done).
 */
export async function holdThread<T>(
  { saver, locks }: HoldContext,
  threadId: string,
  work: () => Promise<T>,
  multitask: "reject" | "enqueue",
  signal?: AbortSignal,
): Promise<T> {
  let done: { result: T } | undefined;
  try {
    await runOnThread(
      { invoke: async () => void (done = { result: await work() }) },
      null,
      { configurable: { thread_id: threadId } },
      { multitask, saver, locks, ...(signal ? { signal } : {}) },
    );
  } catch (error) {
    if (!done) throw error;
  }
  if (!done) throw new Error(`runOnThread returned without running the work on thread ${threadId}.`);
  return done.result;
}

/** This server's holds of threads while idle (a run delete, a state update), in turn per thread. */
export class IdleHolds {
  readonly #context: HoldContext;
  /** Threads held now, by hold count. */
  readonly #holds = new Map<string, number>();
  /** The same holds from their request to their release, which {@link done} waits for. */
  readonly #waits = new Map<string, Set<Promise<void>>>();

  constructor(context: HoldContext) {
    this.#context = context;
  }

  /**
   * Runs `work` while holding `threadId` as a run would (strategy `reject`),
   * after this server's other such holds of the thread, in turn.
   * @throws {ThreadBusyError} a run holds the thread.
   */
  async run<T>(threadId: string, work: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const waits = this.#waits.get(threadId) ?? new Set<Promise<void>>();
    // This server's holds under way take their turns: none is a run, so none refuses another.
    const earlier = [...waits];
    const released = new Promise<void>((resolve) => (release = resolve));
    waits.add(released);
    this.#waits.set(threadId, waits);
    let held = false;
    const holding = async () => {
      held = true;
      this.#holds.set(threadId, (this.#holds.get(threadId) ?? 0) + 1);
      return work();
    };
    try {
      await Promise.all(earlier);
      return await holdThread(this.#context, threadId, holding, "reject");
    } catch (error) {
      // Stopped before `work` ran by a newer run asking for the thread: busy, as for a run.
      throw error instanceof RunInterruptedError ? new ThreadBusyError(threadId, this.#context.saver.dbName) : error;
    } finally {
      // Once the lock is let go: until then, its holder is this hold, not a run.
      const count = (this.#holds.get(threadId) ?? 0) - (held ? 1 : 0);
      if (count > 0) this.#holds.set(threadId, count);
      else this.#holds.delete(threadId);
      waits.delete(released);
      if (waits.size === 0 && this.#waits.get(threadId) === waits) this.#waits.delete(threadId);
      release();
    }
  }

  /** Resolves once the holds of `threadId` under way now have let the thread go. */
  async done(threadId: string): Promise<void> {
    await Promise.all(this.#waits.get(threadId) ?? []);
  }

  /** Whether one of these holds has `threadId`'s lock now. */
  holds(threadId: string): boolean {
    return this.#holds.has(threadId);
  }
}
