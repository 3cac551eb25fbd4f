/**
 * Live push between server processes: a push commits `pg_notify` with its
 * user id, and every process LISTENs on one connection of its own, waking
 * the long-polling pulls of that user that it holds. PostgreSQL delivers a
 * notification only once its transaction commits, so a woken pull always
 * finds the change.
 */
/// <reference types="node" />
import type pg from "pg";

/** The channel pushes notify on. */
export const NOTIFY_CHANNEL = "lgsync_push";

/** How long a lost LISTEN connection waits before it tries again. */
const RECONNECT_MS = 1000;

/** Wakes waiting pulls when their user's data changes, in this process or another. */
export class PushNotifier {
  readonly #connect: () => pg.Client;
  readonly #waiters = new Map<string, Set<() => void>>();
  #client: pg.Client | undefined;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;

  /** @param connect Makes a new client on the server's database (one is kept open for LISTEN). */
  constructor(connect: () => pg.Client) {
    this.#connect = connect;
  }

  /** Starts listening; resolves once LISTEN is in place (or rejects if the database is not there). */
  async start(): Promise<void> {
    const client = this.#connect();
    // A dropped connection (a database restart) must not end the process: listen again, and wake
    // every waiter meanwhile, since a notification may have been lost with the connection.
    client.on("error", () => this.#lost(client));
    client.on("end", () => this.#lost(client));
    client.on("notification", (message) => {
      if (message.channel === NOTIFY_CHANNEL && message.payload !== undefined) this.#wake(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
    } catch (error) {
      // A half-opened client (connected, LISTEN refused) would hold a connection nobody ends.
      await client.end().catch(() => undefined);
      throw error;
    }
    // Closed while connecting (a server stopped during its startup): nobody would end this one either.
    if (this.#closed) await client.end().catch(() => undefined);
    else this.#client = client;
  }

  /**
   * A promise that resolves at the next change of `userId`'s data, after
   * `ms`, or when `abort` fires, whichever comes first. Take it before
   * reading, so that a change committed during the read is not missed.
   */
  next(userId: string, ms: number, abort?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.#waiters.get(userId) ?? new Set();
      this.#waiters.set(userId, set);
      const done = () => {
        clearTimeout(timer);
        abort?.removeEventListener("abort", done);
        set.delete(done);
        if (set.size === 0 && this.#waiters.get(userId) === set) this.#waiters.delete(userId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      abort?.addEventListener("abort", done, { once: true });
      if (this.#closed) done();
      else set.add(done);
    });
  }

  /** Stops listening and wakes every waiter. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    for (const userId of [...this.#waiters.keys()]) this.#wake(userId);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  #wake(userId: string): void {
    for (const done of [...(this.#waiters.get(userId) ?? [])]) done();
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    for (const userId of [...this.#waiters.keys()]) this.#wake(userId);
    if (this.#closed) return;
    const again = () => {
      if (this.#closed) return;
      this.start().catch(() => {
        this.#retry = setTimeout(again, RECONNECT_MS);
        this.#retry.unref();
      });
    };
    this.#retry = setTimeout(again, RECONNECT_MS);
    this.#retry.unref();
  }
}

/** Queues the notification of `userId`'s change in the push's transaction (sent when it commits). */
export async function notifyPush(client: pg.PoolClient, userId: string): Promise<void> {
  await client.query("SELECT pg_notify($1, $2)", [NOTIFY_CHANNEL, userId]);
}
