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
import ipaddr from "ipaddr.js";

/** A counting semaphore per key; idle keys are forgotten. */
export class UserGate {
  readonly #permits: number;
  readonly #lanes = new Map<string, { running: number; waiting: (() => void)[] }>();

  /** @param permits How many of one key's tasks run at once. */
  constructor(permits: number) {
    this.#permits = permits;
  }

  /**
   * Runs `work` once fewer than `permits` tasks of `key` are running;
   * resolves or rejects as it does. When `abandon` fires while the task
   * still waits (its client went away), it leaves the queue unrun and
   * rejects with the signal's reason.
   */
  async run<T>(key: string, work: () => Promise<T>, abandon?: AbortSignal): Promise<T> {
    abandon?.throwIfAborted();
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { running: 0, waiting: [] };
      this.#lanes.set(key, lane);
    }
    if (lane.running >= this.#permits) {
      const queued = lane;
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          abandon?.removeEventListener("abort", leave);
          resolve();
        };
        const leave = () => {
          queued.waiting.splice(queued.waiting.indexOf(turn), 1);
          reject(abandon!.reason);
        };
        abandon?.addEventListener("abort", leave, { once: true });
        queued.waiting.push(turn);
      });
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

/**
 * How many requests of each key hold a body at once: each is up to
 * `maxBodyBytes` in memory from when it is read until its work is done, so
 * without a bound one user with many pushes in flight (waiting their turn
 * above) grows the process without end (40 pushes of 15 MiB: 820 MB).
 */
export class InFlight {
  readonly #max: number;
  readonly #counts = new Map<string, number>();

  /** @param max How many of one key's requests may be in flight. */
  constructor(max: number) {
    this.#max = max;
  }

  /** Takes a place for `key`; returns the function that gives it back (once), or undefined when full. */
  enter(key: string): (() => void) | undefined {
    const count = this.#counts.get(key) ?? 0;
    if (count >= this.#max) return undefined;
    this.#counts.set(key, count + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const rest = this.#counts.get(key)! - 1;
      if (rest === 0) this.#counts.delete(key);
      else this.#counts.set(key, rest);
    };
  }

  /** Places `key` holds now. */
  load(key: string): number {
    return this.#counts.get(key) ?? 0;
  }
}

/**
 * Strikes per key (a remote address) in a fixed window: each request that
 * may be a stranger's takes one, and gives it back once it proved itself.
 * The map holds at most `capacity` keys: past it, expired windows go first,
 * then the oldest key (a key forgotten starts a fresh window, so a flood
 * that cycles through more keys than `capacity` is not bounded here at all:
 * hence IPv6 addresses count by /48 too, see auth.ts).
 */
export class Strikes {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #capacity: number;
  readonly #now: () => number;
  /** In order of each window's start (a renewed window is put at the end). */
  readonly #windows = new Map<string, { count: number; until: number }>();

  /**
   * @param max Strikes one key may hold in a window.
   * @param windowMs How long a window lasts, from its first strike.
   * @param capacity Most keys remembered at once.
   */
  constructor(max: number, windowMs: number, capacity = 10_000, now: () => number = Date.now) {
    this.#max = max;
    this.#windowMs = windowMs;
    this.#capacity = capacity;
    this.#now = now;
  }

  /**
   * Takes a strike for `key`: the function that gives it back (once, and
   * only within its window), or undefined when `key` has none left (see
   * {@link retryAfterMs}).
   */
  take(key: string): (() => void) | undefined {
    const now = this.#now();
    let window = this.#windows.get(key);
    if (window && window.until <= now) {
      this.#windows.delete(key);
      window = undefined;
    }
    if (!window) {
      this.#makeRoom();
      window = { count: 0, until: now + this.#windowMs };
      this.#windows.set(key, window);
    }
    if (window.count >= this.#max) return undefined;
    window.count += 1;
    const taken = window;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      taken.count -= 1;
      if (taken.count === 0 && this.#windows.get(key) === taken) this.#windows.delete(key);
    };
  }

  /** How long until `key` has a strike again (0 when it has one now). */
  retryAfterMs(key: string): number {
    const window = this.#windows.get(key);
    if (!window || window.count < this.#max) return 0;
    return Math.max(0, window.until - this.#now());
  }

  /** Keys remembered (for tests). */
  get size(): number {
    return this.#windows.size;
  }

  #makeRoom(): void {
    // In order of start, and every window is as long: the expired ones go first, then the oldest live ones.
    for (const key of this.#windows.keys()) {
      if (this.#windows.size < this.#capacity) return;
      this.#windows.delete(key);
    }
  }
}

/**
 * The key a remote address takes strikes under: an IPv4 address as is (an
 * IPv4-mapped IPv6 one too, however it is written), an IPv6 address by its
 * /64, the block one host is given and can take any address in, one per
 * guess. What is not an address (a proxy's `X-Forwarded-For: unknown`) is
 * its own key.
 */
export function strikeKey(address: string | undefined): string {
  // No address: the socket closed before the request was looked at (Fastify's `ip` is then undefined).
  if (typeof address !== "string") return "";
  const ip = parseAddress(address);
  if (ip === undefined) return address;
  return ip instanceof ipaddr.IPv6 ? `${hexGroups(ip, 4)}::/64` : ip.toString();
}

/**
 * The site an IPv6 address's strikes also count under: its /48, the block
 * a site (or anyone, from a tunnel broker) is given, which holds 65,536 /64s:
 * more than the map of {@link strikeKey}s remembers, so a fresh /64 for each
 * guess would forget the earlier ones and never meet the limit. Undefined
 * for IPv4 (and a missing address, or one that is not an address).
 */
export function strikeSite(address: string | undefined): string | undefined {
  if (typeof address !== "string") return undefined;
  const ip = parseAddress(address);
  return ip instanceof ipaddr.IPv6 ? `${hexGroups(ip, 3)}::/48` : undefined;
}

/** An address as ipaddr.js reads it (zone ids too), an IPv4-mapped IPv6 one as IPv4; undefined when it is none. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  return ipaddr.isValid(address) ? ipaddr.process(address) : undefined;
}

/** The first `count` 16-bit groups of an IPv6 address, in hex without leading zeros. */
function hexGroups(ip: ipaddr.IPv6, count: number): string {
  return ip.parts
    .slice(0, count)
    .map((part) => part.toString(16))
    .join(":");
}
