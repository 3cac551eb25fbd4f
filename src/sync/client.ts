/**
 * `SyncClient`: replicates an `IndexedDBSaver` with a sync server, one-shot
 * (`syncNow`) or continuously while online (`start`), with backoff. A thin
 * facade over `syncRound` (engine.ts): this file only schedules rounds,
 * holds the cross-tab lock, and reports status.
 */
import type { IndexedDBSaver } from "../saver/index.js";
import { crossTabName, openChannel, postQuietly } from "../core/channel.js";
import { Listeners } from "../core/listeners.js";
import { defaultLockManager } from "../core/locks.js";
import { rawAccessOf, type SaverRawAccess } from "../saver/raw-access.js";
import { markSyncing } from "../saver/syncing.js";
import { countPending, syncRound, type SyncProgress, type SyncResult } from "./engine.js";
import { syncProblem, type SyncProblem } from "./problems.js";
import type { SkippedThread } from "./send.js";
import { SyncError, SyncTransport, type FetchLike } from "./transport.js";
import { MAX_THREADS_PAGE, parseApp, type WireThread } from "./protocol.js";
import { runLive } from "./live.js";
import { deviceId, lastScope, readSyncState } from "./state.js";

/** Options of {@link SyncClient}. */
export interface SyncClientOptions {
  /** The saver to replicate. */
  saver: IndexedDBSaver;
  /** The sync server's base URL, e.g. `https://sync.example.com` or `http://127.0.0.1:8787`. */
  url: string;
  /** The user's credential, sent as `Authorization: Bearer <token>`. */
  token: string;
  /**
   * The app this saver's threads belong to: a device replicates only with
   * the devices of the same user naming the same app, so two apps sharing a
   * server and a token keep their threads apart. Default: the saver's
   * `dbName`. `null` names none: the user's own space, as clients that
   * predate apps use (the first app of a user to name itself shares it).
   */
  app?: string | null;
  /** Replaces `globalThis.fetch` (tests, custom agents). */
  fetch?: FetchLike;
  /** Checkpoints per push request. Default 64. */
  batchSize?: number;
  /** Bytes of values per push request. Default 4 MiB. */
  batchBytes?: number;
  /** Changes per pull request. Default 200. */
  pullLimit?: number;
  /** While running, how often to look for the other devices' changes. Default 10 s. */
  intervalMs?: number;
  /** First retry delay after a failure; doubles up to `maxBackoffMs`. Default 1 s. */
  minBackoffMs?: number;
  /** Default 60 s. */
  maxBackoffMs?: number;
  /** Per-request timeout. Default 30 s. */
  timeoutMs?: number;
  /**
   * Live push: while running, keep one long poll open on the server, so
   * another device's push starts a round here within about a second instead
   * of at the next interval. When the poll fails or the server lacks it,
   * it backs off and the interval rounds go on. Default true.
   */
  live?: boolean;
}

/** What the client is doing. */
export type SyncState = "stopped" | "idle" | "syncing" | "offline" | "error";

/** The status a UI shows ("3 threads syncing", "offline, 12 changes waiting"). */
export interface SyncStatus {
  state: SyncState;
  /** Local changes (checkpoints and deletes) not yet on the server, as last counted. */
  pending: number;
  /** Threads being pushed or pulled in the current round. */
  threads: number;
  /** When the last round completed (ms since the epoch). */
  lastSyncedAt?: number;
  /**
   * When the last completed round that pushed every thread began (ms since
   * the epoch, this page's clock). A change committed before this time is on
   * the server (unless the round named it in `skipped`). `lastSyncedAt`
   * cannot tell that: a round that began before a write can end after it,
   * and `pending` is as that round counted it, without the write. A round of
   * `syncNow({ threadIds })` pushes only those threads, so it leaves this as
   * it was; a failed round too.
   */
  lastSyncStartedAt?: number;
  /**
   * The last failure as an app shows it, while `offline` or `error`: a code
   * to switch on and a sentence for the person using the app.
   */
  problem?: SyncProblem;
  /** The last failure's message while `offline` or `error` (for developers: it quotes the server). */
  error?: string;
  /**
   * Threads the last round left out, each with the reason (ids the server
   * cannot store, rows it refused); the other threads synced.
   */
  skipped?: SkippedThread[];
  /** When the next attempt is due (continuous mode, after a failure). */
  retryAt?: number;
  /** True when this status comes from another tab (the one holding the sync lock). */
  remote: boolean;
}

/** A listener of {@link SyncStatus}. */
export type SyncStatusListener = (status: SyncStatus) => void;

/** Options of {@link SyncClient.syncNow}. */
export interface SyncNowOptions {
  /** Push only these threads (the pull always brings every thread's changes). */
  threadIds?: string[];
}

/** Version of the status messages between tabs. */
const STATUS_PROTOCOL = 1;

/**
 * Replicates an `IndexedDBSaver` with a sync server (`createSyncServer`):
 * pushes what the server lacks, pulls what this browser lacks, deletes
 * included. Checkpoints are immutable and uniquely identified, so devices
 * that wrote on one thread while apart end up with the union: one head (the
 * newest checkpoint id) and the other line as a branch of its history.
 *
 * Only one tab of an origin runs a round at a time (Web Locks); the others
 * see its status through `subscribe`.
 *
 * @example
 * ```ts
 * import { SyncClient } from "langgraph-checkpoint-indexeddb/sync";
 * const sync = new SyncClient({ saver, url: "https://sync.example.com", token });
 * sync.subscribe((s) => (statusLine.textContent = s.state === "offline" ? `offline, ${s.pending} changes waiting` : s.state));
 * sync.start();             // continuous while online
 * await sync.syncNow();     // or one round on demand
 * ```
 */
export class SyncClient {
  readonly #options: SyncClientOptions;
  readonly #access: SaverRawAccess;
  readonly #transport: SyncTransport;
  readonly #listeners = new Listeners<SyncStatus>();
  #status: SyncStatus = { state: "stopped", pending: 0, threads: 0, remote: false };
  /** Rounds of this client run one after another. */
  #queue: Promise<unknown> = Promise.resolve();
  #running = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the scheduled round is due (ms since the epoch). */
  #due = 0;
  #failures = 0;
  #unsubscribeFeed: (() => void) | undefined;
  #channel: BroadcastChannel | undefined;
  /** Ends the live long poll; set while one runs. */
  #live: AbortController | undefined;
  readonly #onOnline = () => this.#schedule(0);

  constructor(options: SyncClientOptions) {
    const access = rawAccessOf(options.saver);
    if (!access) throw new TypeError("SyncClient: `saver` must be an IndexedDBSaver.");
    this.#access = access;
    if (typeof options.url !== "string" || !/^https?:\/\//i.test(options.url))
      throw new TypeError('SyncClient: `url` must be the server\'s http(s) base URL, e.g. "http://127.0.0.1:8787".');
    // A scheme ignores case ("HTTP://", as typed): one spelling, so the state kept per server URL is found again.
    options = { ...options, url: options.url.replace(/^https?:/i, (scheme) => scheme.toLowerCase()) };
    if (typeof options.token !== "string" || options.token.length === 0)
      throw new TypeError("SyncClient: `token` (the user's credential) is required.");
    this.#options = options;
    let app: string | undefined;
    try {
      app = options.app === null ? undefined : parseApp(options.app ?? options.saver.dbName);
    } catch (error) {
      throw new TypeError(`SyncClient: \`app\`: ${(error as Error).message}`);
    }
    this.#transport = new SyncTransport({
      url: options.url,
      token: options.token,
      app,
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
    });
    this.#channel = openChannel(crossTabName({ kind: "sync-status", dbName: options.saver.dbName }), (data) => {
      const message = data as { v?: number; status?: SyncStatus } | null;
      if (message?.v === STATUS_PROTOCOL && message.status) this.#deliver({ ...message.status, remote: true });
    });
    // Once made (its options checked): what would rewrite a stored checkpoint in place (threads.patchState)
    // is refused from now on, before this client's first round writes a sync record.
    markSyncing(options.saver);
  }

  /** The latest status (this tab's, or the syncing tab's). */
  get status(): SyncStatus {
    return this.#status;
  }

  /** Listens to status changes; returns the function that stops listening. */
  subscribe(listener: SyncStatusListener): () => void {
    return this.#listeners.add(listener);
  }

  /**
   * One round: push every local change the server lacks, then pull every
   * change after this device's cursor. Resolves once both are committed (on
   * the server and in IndexedDB), so both sides agree on everything written
   * before the call. Rejects with `SyncError` (`retryable` tells whether a
   * later round may succeed); what was done stays done.
   */
  syncNow(options: SyncNowOptions = {}): Promise<SyncResult> {
    const run = this.#queue.then(() => this.#locked(() => this.#round(options)));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Syncs continuously: a round now, after every local change (debounced),
   * every `intervalMs`, when the browser comes back online, and (with
   * `live`, after the first round) as soon as another device pushes; after
   * a failure, retries with exponential backoff.
   */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#unsubscribeFeed = this.#options.saver.subscribe(() => this.#schedule(200));
    globalThis.addEventListener?.("online", this.#onOnline);
    this.#schedule(0);
  }

  /** Stops continuous sync and aborts the live long poll (a round in flight finishes). */
  stop(): void {
    this.#running = false;
    this.#live?.abort();
    this.#live = undefined;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unsubscribeFeed?.();
    this.#unsubscribeFeed = undefined;
    globalThis.removeEventListener?.("online", this.#onOnline);
    this.#set({ state: "stopped", retryAt: undefined });
  }

  /**
   * The threads this user and app hold on the sync server, in the server's
   * order of thread ids, with how many checkpoints each has there and its
   * newest: read a page at a time (`pageSize`, 1 to 1,000, default 1,000),
   * so a user with 100,000 threads costs a hundred bounded requests rather
   * than one huge reply. Rejects with `SyncError`, as a round does.
   */
  async *remoteThreads(options: { pageSize?: number } = {}): AsyncGenerator<WireThread> {
    const pageSize = options.pageSize ?? MAX_THREADS_PAGE;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_THREADS_PAGE)
      throw new RangeError(`SyncClient.remoteThreads: pageSize must be an integer from 1 to ${MAX_THREADS_PAGE}.`);
    yield* this.#transport.threads(pageSize);
  }

  /** Stops and releases the status channel. */
  close(): void {
    this.stop();
    this.#channel?.close();
    this.#channel = undefined;
  }

  #schedule(delayMs: number): void {
    if (!this.#running) return;
    const due = Date.now() + delayMs;
    if (this.#timer !== undefined) {
      if (this.#due <= due) return; // a round is already due sooner
      clearTimeout(this.#timer);
    }
    this.#due = due;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#scheduledRound();
    }, delayMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /**
   * A round of continuous sync: on success the next one is due in
   * `intervalMs` (and the live poll starts, if on); on failure, after a
   * backoff. Resolves whether it succeeded.
   */
  #scheduledRound(): Promise<boolean> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    return this.syncNow().then(
      () => {
        this.#failures = 0;
        this.#schedule(this.#options.intervalMs ?? 10_000);
        this.#startLive();
        return true;
      },
      (error: unknown) => {
        this.#failures += 1;
        const delay = this.#backoff(this.#failures);
        this.#set({ retryAt: Date.now() + delay, error: (error as Error).message, problem: syncProblem(error) });
        this.#schedule(delay);
        return false;
      },
    );
  }

  /** Full jitter: many devices coming back online do not retry in step. */
  #backoff(failures: number): number {
    const min = this.#options.minBackoffMs ?? 1000;
    const max = this.#options.maxBackoffMs ?? 60_000;
    return Math.min(max, min * 2 ** (failures - 1)) * (0.5 + Math.random() / 2);
  }

  /** Opens the live long poll once a round has found the server (its cursor is known by then). */
  #startLive(): void {
    if (!this.#running || this.#live || this.#options.live === false) return;
    const live = new AbortController();
    this.#live = live;
    const url = this.#options.url.replace(/\/+$/, "");
    void runLive({
      transport: this.#transport,
      position: async () => {
        const scope = await lastScope(this.#access, url);
        const { cursor } = scope === undefined ? { cursor: 0 } : await readSyncState(this.#access, scope);
        return { cursor, device: await deviceId(this.#access) };
      },
      round: () => this.#scheduledRound(),
      backoff: (failures) => this.#backoff(failures),
      signal: live.signal,
    });
  }

  /**
   * Runs `work` holding the sync lock of the saver's database: Web Locks
   * across the origin's tabs and workers, or where they are missing the
   * in-process stand-in (as runs and key changes do), so two clients of one
   * page still never run rounds of one database at once.
   */
  #locked<T>(work: () => Promise<T>): Promise<T> {
    return defaultLockManager().request(crossTabName({ kind: "sync", dbName: this.#options.saver.dbName }), {}, work);
  }

  async #round(options: SyncNowOptions): Promise<SyncResult> {
    const saver = this.#options.saver;
    // Taken before the round reads anything (inside the lock): every change committed before it
    // is in what this round's scan finds and pushes.
    const began = Date.now();
    this.#set({ state: "syncing", error: undefined, problem: undefined, retryAt: undefined, threads: 0 });
    try {
      const result = await syncRound({
        access: this.#access,
        serde: saver.serde,
        unlock: () => saver.unlock(),
        transport: this.#transport,
        url: this.#options.url.replace(/\/+$/, ""),
        threadIds: options.threadIds,
        batchSize: this.#options.batchSize ?? 64,
        batchBytes: this.#options.batchBytes ?? 4 * 1024 * 1024,
        pullLimit: this.#options.pullLimit ?? 200,
        onProgress: (progress: SyncProgress) => this.#set({ pending: progress.pending, threads: progress.threads }),
      });
      this.#set({
        state: this.#running ? "idle" : "stopped",
        threads: 0,
        lastSyncedAt: Date.now(),
        ...(options.threadIds ? {} : { lastSyncStartedAt: began }),
        skipped: result.skipped.length > 0 ? result.skipped : undefined,
      });
      return result;
    } catch (error) {
      const offline = error instanceof SyncError && error.code === "offline";
      // What waits, counted locally: the round may have failed before counting.
      const pending = await countPending(this.#access, this.#options.url.replace(/\/+$/, "")).catch(
        () => this.#status.pending,
      );
      this.#set({
        state: offline ? "offline" : "error",
        threads: 0,
        pending,
        error: (error as Error).message,
        problem: syncProblem(error),
      });
      throw error;
    }
  }

  #set(patch: Partial<SyncStatus>): void {
    const status: SyncStatus = { ...this.#status, ...patch, remote: false };
    for (const key of Object.keys(status) as (keyof SyncStatus)[]) if (status[key] === undefined) delete status[key];
    this.#deliver(status);
    postQuietly(this.#channel, { v: STATUS_PROTOCOL, status });
  }

  #deliver(status: SyncStatus): void {
    this.#status = status;
    this.#listeners.deliver(status);
  }
}
