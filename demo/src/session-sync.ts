/**
 * A session's sync: the client replicating its saver to the server in the
 * settings (none: sync off), and the status the sidebar shows. Apart from
 * `Session` because it has its own life: restarted on a settings change,
 * carried over to the next session on a lock change.
 */
import { connectRefusal } from "../csp.js";
import { SyncClient, type IndexedDBSaver, type SyncStatus } from "./lib.js";
import { NO_SYNC, type SyncSettings } from "./sync.js";

const STOPPED: SyncStatus = { state: "stopped", pending: 0, threads: 0, remote: false };

/** The sync client of one saver, and who listens to its status. */
export class SyncLink {
  /** Where the saver syncs to (empty: nowhere). */
  settings: SyncSettings = NO_SYNC;
  #client: SyncClient | undefined;
  #status: SyncStatus = STOPPED;
  readonly #listeners = new Set<(status: SyncStatus) => void>();
  #lastSyncedAt = 0;

  /**
   * @param saver the saver to replicate
   * @param onSynced called after each round that synced something new (threads another device started
   *   arrive in the saver without a sidebar row)
   */
  constructor(
    readonly saver: IndexedDBSaver,
    readonly onSynced: () => void,
  ) {}

  /**
   * (Re)starts the client for `settings`; stops it when they name no server.
   * Settings the client refuses (an address without http(s)://), or the
   * page's policy (plain http to another machine), throw here, and the
   * client running before goes on as it was.
   */
  start(settings: SyncSettings): void {
    const { url, token } = settings;
    const refused = url && token ? connectRefusal(url, location.origin) : undefined;
    if (refused) throw new Error(refused);
    // One app whether the database is locked or not (each has its own dbName): a locked device and a
    // plain one of the same user then meet, and the sync says why they cannot share threads. Live push
    // (on by default) brings another device's turn within about a second; the interval is only the
    // fallback for when its long poll is down.
    const client =
      url && token
        ? new SyncClient({ saver: this.saver, url, token, app: "langgraph-demo", intervalMs: 60_000 })
        : undefined;
    this.settings = settings;
    this.close();
    if (!client) {
      this.#setStatus(STOPPED);
      return;
    }
    this.#client = client;
    client.subscribe((status) => {
      if (this.#client !== client) return;
      this.#setStatus(status);
      if (status.lastSyncedAt && status.lastSyncedAt !== this.#lastSyncedAt) {
        this.#lastSyncedAt = status.lastSyncedAt;
        this.onSynced();
      }
    });
    client.start();
  }

  /** One sync round now; resolves when both sides agree. */
  async syncNow(): Promise<void> {
    if (!this.#client) throw new Error("Sync is off: set a server URL and a token first.");
    await this.#client.syncNow();
  }

  /** Tells `listener` the status now and on every change; returns the function that stops it. */
  onStatus(listener: (status: SyncStatus) => void): () => void {
    this.#listeners.add(listener);
    listener(this.#status);
    return () => void this.#listeners.delete(listener);
  }

  /** Stops the client (the status stays as it was last told). */
  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }

  #setStatus(status: SyncStatus): void {
    this.#status = status;
    for (const listener of this.#listeners) listener(status);
  }
}
