/**
 * Each user's share of a server process's database connections. A request
 * holds a pooled connection for as long as its work runs, and a user's
 * pushes take turns on the user's row lock: without a gate, a user with
 * more pushes in flight than the pool has connections holds every one of
 * them, most of them idle behind that lock, and every other user's request
 * waits in the pool's queue until those pushes are done one after another
 * (24 pushes of 8 MiB kept another user's `/hello` waiting 11 s). So a
 * user's work beyond its share waits here, holding no connection, and the
 * pool's queue holds at most that share of each user.
 */

/** A counting semaphore per key; idle keys are forgotten. */
export class UserGate {
  readonly #permits: number;
  readonly #lanes = new Map<string, { running: number; waiting: (() => void)[] }>();

  /** @param permits How many of one key's tasks run at once. */
  constructor(permits: number) {
    this.#permits = permits;
  }

  /** Runs `work` once fewer than `permits` tasks of `key` are running; resolves or rejects as it does. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { running: 0, waiting: [] };
      this.#lanes.set(key, lane);
    }
    if (lane.running >= this.#permits) {
      const queued = lane;
      await new Promise<void>((resolve) => queued.waiting.push(resolve));
    } else {
      lane.running += 1;
    }
    try {
      return await work();
    } finally {
      // The permit passes straight to the next task waiting, or is returned.
      const next = lane.waiting.shift();
      if (next) next();
      else if (--lane.running === 0) this.#lanes.delete(key);
    }
  }

  /** Tasks of `key` running or waiting (for tests and limits). */
  load(key: string): number {
    const lane = this.#lanes.get(key);
    return lane ? lane.running + lane.waiting.length : 0;
  }
}
