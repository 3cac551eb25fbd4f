/**
 * The write lease of a saver's database: an exclusive Web Lock that every
 * saver of this package holds while it creates a read-write transaction on
 * the database, and keeps afterwards until another saver (another tab, a
 * worker, another saver in this page) asks for it.
 *
 * What it proves: while a saver holds the lease, no other saver can create
 * a read-write transaction on the database. So whatever this saver read or
 * wrote while holding it stays what the database holds, apart from its own
 * writes, until the lease is lost (fresh-cache.ts answers reads from memory
 * on that ground). Losing the lease is synchronous on the holder's side: a
 * request arrives (a BroadcastChannel message), the holder forgets what it
 * kept, then lets the lock go; the asking saver gets the lock only after
 * that, so no write of its can slip in while the holder still trusts its
 * memory. Transactions the holder created before letting go come first in
 * IndexedDB's order (transactions with overlapping scopes run in the order
 * they were created), so the next holder's reads see them.
 *
 * The cost: a saver alone on its database takes the lock once and keeps it
 * while it is busy; savers writing in turn hand it over at each turn (one
 * lock grant and one message, well under a millisecond between tabs). A
 * request is repeated every {@link ASK_AGAIN_MS} while it waits, since the
 * holder may have taken the lock again (for a write of its own) before the
 * request was queued.
 *
 * Liveness: a holder that stops running tasks (a frozen or suspended
 * background tab, a page paused in a debugger) never answers a request, and
 * every other saver's writes would wait for it. So the lease is kept only
 * while giving it back is cheap and the holder surely runs: it is let go
 * after {@link IDLE_RELEASE_MS} with no write and no read answered from
 * memory, and, where there is a document, as soon as the page is hidden,
 * frozen or unloaded (browsers freeze or suspend hidden pages, never
 * visible ones). A hidden page still writes: it takes the lease for each
 * write and lets it go right after the transaction is created.
 *
 * A read of a saver that answers from memory takes a free lease back
 * ({@link WriteLease.takeIfFree}): only if no one holds it or waits for it,
 * so a read never takes it from a saver that writes.
 *
 * Where BroadcastChannel is missing there is no way to ask a holder, so no
 * saver holds the lease, writes wait for nothing, and nothing is answered
 * from memory. Where Web Locks are missing (Node), core/locks.ts's
 * in-process stand-in coordinates the savers of one realm, which is every
 * saver that shares an in-memory IndexedDB there.
 */
import { crossTabName, pageHidden, VersionedChannel, watchPage } from "../core/channel.js";
import { Listeners } from "../core/listeners.js";
import { defaultLockManager, type RunLockManager } from "../core/locks.js";
import { nextTask } from "../core/tasks.js";

/** How often a waiting saver asks the holder again (see the module comment). */
export const ASK_AGAIN_MS = 20;

/**
 * How long a saver keeps the lease with no write and no read answered from
 * memory. A graph run's writes come in bursts: supersteps measured 8.9 ms
 * apart at the median and 19 ms at p99 (docs/benchmarks.md, load rows), so
 * one second keeps the lease across a run's steps with a 50x margin. Letting
 * it go costs little: the next write takes it again (one uncontended lock
 * grant) and the next latest read goes to IndexedDB once (about 1 ms, the
 * getTuple row there). What it bounds: a holder that stops running (paused
 * in a debugger, say) later than this after its last write has let the
 * lease go by then. One that stops sooner runs no timer, so it holds the
 * lease until it runs again; a page that is frozen let it go when it was
 * hidden, before it froze. Gaps longer than this (a model call, a user
 * typing) would need an idle period no one should wait for, so they are not
 * bridged.
 */
export const IDLE_RELEASE_MS = 1000;

/** Version of the request messages. */
const PROTOCOL = 1;

interface LeaseRequest {
  sender: string;
}

/** One saver's side of its database's write lease. @internal */
export class WriteLease {
  readonly #name: string;
  readonly #locks: RunLockManager;
  readonly #sender = Math.random().toString(36).slice(2);
  readonly #lost = new Listeners<void>();
  #channel: VersionedChannel<LeaseRequest> | undefined;
  #held = false;
  #epoch = 0;
  #release: (() => void) | undefined;
  #acquiring: Promise<void> | undefined;
  /** A read's {@link WriteLease.takeIfFree} is to ask in a later task. */
  #offered = false;
  /** Set by close() until this saver's next write: a read still in flight then must not take the lease back. */
  #closed = false;
  /** When a read's request was last refused (performance.now()): another saver holds the lease or waits. */
  #refusedAt = -Infinity;
  readonly #idleMs: number;
  #idle: ReturnType<typeof setTimeout> | undefined;
  /** When the lease was last used (performance.now()). */
  #lastUse = 0;
  #unwatchPage: (() => void) | undefined;

  constructor(dbName: string, locks: RunLockManager = defaultLockManager(), idleMs = IDLE_RELEASE_MS) {
    this.#name = crossTabName({ kind: "write-lease", dbName });
    this.#locks = locks;
    this.#idleMs = idleMs;
  }

  /** Whether this environment can hold a lease (it needs a channel to be asked for it). */
  static get supported(): boolean {
    return typeof BroadcastChannel !== "undefined";
  }

  /** Whether this saver holds the lease right now. */
  get held(): boolean {
    return this.#held;
  }

  /** Changes whenever the lease is taken or lost: equal epochs with `held` mean it was held throughout. */
  get epoch(): number {
    return this.#epoch;
  }

  /** Calls `listener` synchronously when the lease is lost (before another saver can write). */
  onLost(listener: () => void): () => void {
    return this.#lost.add(listener);
  }

  /**
   * `undefined` when this saver may create a read-write transaction now
   * (it holds the lease, or leases are unsupported here); otherwise a
   * promise that settles once it holds it. Callers check again after
   * awaiting: the lease may have been asked for meanwhile. The caller
   * creates its transaction in the same tick as an `undefined`.
   */
  ensure(): Promise<void> | undefined {
    if (!WriteLease.supported) return undefined;
    this.#closed = false;
    if (!this.#held) return (this.#acquiring ??= this.#acquire());
    this.used();
    return undefined;
  }

  /**
   * Takes the lease for this saver's reads if no saver holds it or waits for
   * it (a lock request `ifAvailable`), never asking a holder to let go: a
   * read must not take it from a saver that writes. So a saver whose lease
   * went idle answers its next reads from memory again (fresh-cache.ts keeps
   * what a read finds only while the lease is held). Not on a hidden page,
   * which would have to let it go at once. Does not wait for the grant, nor
   * ask in this task: the lock request took 0.2-0.3 ms of the main thread
   * (Chromium), which the read that calls this would pay before its caller
   * resumes (docs/benchmarks.md, "The first read after a pause"). Asked in
   * a later task instead, unless the lease was taken, lost or closed since.
   * Never after close() until the next write: a read in flight when the
   * saver closed would otherwise hold the lease for a saver no longer in use.
   * Not again for an idle period after a refusal: a saver that holds the
   * lease keeps it at least that long once used, and a tab reading while
   * another writes asked at every other read (helper-42: 104 requests in
   * 200 reads), each a lock request refused.
   */
  takeIfFree(): void {
    if (!WriteLease.supported || this.#held || this.#acquiring || this.#offered || this.#closed) return;
    if (performance.now() - this.#refusedAt < this.#idleMs) return;
    const epoch = this.#epoch;
    this.#offered = true;
    const ask = () => {
      this.#offered = false;
      if (epoch === this.#epoch && !this.#held && !this.#acquiring && !pageHidden())
        (this.#acquiring = this.#acquire(true)).catch(() => undefined);
    };
    void nextTask().then(ask, ask);
  }

  /**
   * The lease was used (a write, a read answered from memory): it is kept
   * {@link IDLE_RELEASE_MS} longer, or, on a hidden page, let go once the
   * current task's transaction is created (a microtask later).
   */
  used(): void {
    if (!this.#held) return;
    if (pageHidden()) queueMicrotask(() => this.#drop());
    else this.#keepIdle();
  }

  /**
   * Keeps the lease {@link IDLE_RELEASE_MS} from now. A use only notes the
   * time; the one timer, when it fires, lets go or waits out what is left.
   * A timer reset at every use (clearTimeout, setTimeout) took about 7% of
   * the time of the reads answered from memory in a Chromium profile.
   */
  #keepIdle(): void {
    this.#lastUse = performance.now();
    if (this.#idle === undefined) this.#armIdle(this.#idleMs);
  }

  #armIdle(ms: number): void {
    this.#idle = setTimeout(this.#onIdle, ms);
    (this.#idle as { unref?: () => void }).unref?.();
  }

  readonly #onIdle = (): void => {
    this.#idle = undefined;
    // Never longer than a full period: a clock that went backwards must not keep the lease.
    const left = Math.min(this.#lastUse + this.#idleMs - performance.now(), this.#idleMs);
    if (left > 0) this.#armIdle(left);
    else this.#drop();
  };

  /** Takes the lock, asking the holder for it; `ifFree`: only if free, asking no one. */
  async #acquire(ifFree = false): Promise<void> {
    // Listening before the lock is held: a saver asking for it is answered at once.
    const channel = (this.#channel ??= this.#openChannel());
    // Whenever the page is hidden, frozen or unloaded: a hidden page may be frozen with no
    // further event, and a frozen one never answers a request.
    this.#unwatchPage ??= watchPage(() => this.#drop());
    let granted!: () => void;
    const got = new Promise<void>((resolve) => (granted = resolve));
    const holding = this.#locks.request(this.#name, ifFree ? { ifAvailable: true } : {}, async (lock) => {
      // Refused (held, or asked for), granted to a read once the page was hidden, or granted after a close()
      // that closed the channel requests come on (a holder no one could ask): stays without it. A write
      // waiting for it asks again, on a channel of its own.
      if (!lock && ifFree) this.#refusedAt = performance.now();
      if (!lock || (ifFree && pageHidden()) || channel !== this.#channel) return;
      this.#held = true;
      this.#epoch++;
      this.#acquiring = undefined;
      // Not used() on a hidden page: the waiting write has yet to take it (its next ensure() lets it go).
      this.#keepIdle();
      granted();
      await new Promise<void>((resolve) => (this.#release = resolve));
    });
    // Settles when let go; a lock manager that fails leaves this saver without the lease.
    holding.catch(() => this.#drop());
    const ask = () => channel.post({ sender: this.#sender });
    if (!ifFree) ask();
    const timer = ifFree ? undefined : setInterval(ask, ASK_AGAIN_MS);
    (timer as { unref?: () => void } | undefined)?.unref?.();
    try {
      await Promise.race([got, holding]);
    } finally {
      clearInterval(timer);
      this.#acquiring = undefined;
    }
  }

  /** The channel other savers ask for the lease on, answered by {@link WriteLease.#onRequest}. */
  #openChannel(): VersionedChannel<LeaseRequest> {
    const channel = new VersionedChannel<LeaseRequest>(
      this.#name,
      PROTOCOL,
      (message) => typeof message.sender === "string",
    );
    channel.listen(this.#onRequest);
    return channel;
  }

  /** Another saver asks for the lease: forget, then let go. */
  readonly #onRequest = (message: LeaseRequest): void => {
    if (message.sender !== this.#sender && this.#held) this.#drop();
  };

  #drop(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    const wasHeld = this.#held;
    this.#held = false;
    this.#epoch++;
    if (wasHeld) this.#lost.deliver();
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  /** Lets the lease go and stops listening (the saver closes); the next write takes it again. */
  close(): void {
    this.#closed = true;
    this.#drop();
    this.#channel?.close();
    this.#channel = undefined;
    this.#unwatchPage?.();
    this.#unwatchPage = undefined;
  }
}

/** A saver database's lease, and whether that saver answers reads from memory. @internal */
export interface LeaseRecord {
  lease: WriteLease;
  freshReads: boolean;
}

const leases = new WeakMap<object, LeaseRecord>();

/**
 * Makes the write lease of a saver's database `db`, at its first write.
 * Loaded with the saver, not with the cache: every write must take the
 * lease whether or not this saver's cache could be fetched, or another
 * saver could answer from memory past it. @internal
 */
export function registerLease(db: object, dbName: string, freshReads: boolean): LeaseRecord {
  const record = { lease: new WriteLease(dbName), freshReads };
  leases.set(db, record);
  return record;
}

/** The lease of a saver's database, once its first write has taken it. @internal */
export function leaseOf(db: object): LeaseRecord | undefined {
  return leases.get(db);
}
