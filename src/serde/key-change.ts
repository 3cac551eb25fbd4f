/**
 * What makes a key change (`rekey`, `changeKey`) safe with several tabs: a
 * lock, so two tabs never rotate one database's key at once, and an
 * announcement, so other tabs' savers and stores drop their bound key at
 * once instead of finding out in their next write (whose transaction checks
 * the key id either way: see `withCurrentKey` in protocol.ts).
 */
import { defaultLockManager } from "../core/locks.js";
import { crossTabName, openChannel, postQuietly } from "../core/channel.js";

/**
 * The Web Locks name a key change of database `dbName` holds:
 * `langgraph-checkpoint-indexeddb:v1:<dbName>:key`, the name URI-encoded.
 */
export function keyLockName(dbName: string): string {
  return crossTabName({ kind: "key", dbName });
}

/**
 * Runs `change` holding the key-change lock of database `dbName` (Web Locks
 * across tabs and workers; in one realm only where they are missing).
 * @internal
 */
export function withKeyLock<T>(dbName: string, change: () => Promise<T>): Promise<T> {
  return defaultLockManager().request(keyLockName(dbName), {}, change);
}

/**
 * Key-change announcements for a database without a change feed (the
 * store), on the channel name the saver's change feed uses, with the
 * message it sends for a key change: `{ v: 1, sender, key: true }`.
 * @internal
 */
export class KeyChangeChannel {
  readonly #name: string;
  readonly #sender = Math.random().toString(36).slice(2);
  #channel: BroadcastChannel | undefined;
  #listener: (() => void) | undefined;

  constructor(dbName: string) {
    this.#name = crossTabName({ kind: "changes", dbName });
  }

  /** Calls `listener` when another tab or instance announces a key change. */
  listen(listener: () => void): void {
    this.#listener = listener;
    this.#open();
  }

  /** Tells the others that the key record changed. */
  announce(): void {
    // Dropped on a closed channel: the write transactions still check the key.
    postQuietly(this.#open(), { v: 1, sender: this.#sender, key: true });
  }

  close(): void {
    this.#channel?.close();
    this.#channel = undefined;
  }

  #open(): BroadcastChannel | undefined {
    this.#channel ??= openChannel(this.#name, (data) => {
      const message = data as { v?: number; sender?: string; key?: boolean } | null;
      if (message?.v === 1 && message.key && message.sender !== this.#sender) this.#listener?.();
    });
    return this.#channel;
  }
}
