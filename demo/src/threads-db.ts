/**
 * The demo's own database (Dexie): the sidebar's threads and the settings.
 * LangGraph's data lives in the saver's and the store's databases; this one
 * only holds what the UI needs to list threads quickly and live (`liveQuery`
 * re-runs in every tab when a row changes).
 *
 * Texts that come from the conversation (thread titles) and the model
 * settings (an API key) are kept as {@link StoredText}: plain while the app
 * is unlocked, sealed by the passphrase's key once it is locked.
 */
import Dexie, { liveQuery, type EntityTable, type Observable, type Table } from "dexie";

/** A text as stored: plain, or sealed with the vault's key (see settings.ts). */
export type StoredText = string | { type: string; data: Uint8Array };

/** One thread of the sidebar; `id` is the LangGraph `thread_id` (a ulid). */
export interface ThreadRow {
  id: string;
  title: StoredText;
  /** The thread's custom instructions (a system message the agent prepends), sealed like the title. */
  instructions?: StoredText;
  createdAt: number;
  updatedAt: number;
}

/** The lock: a random PBKDF2 salt and a sealed check value. Never the passphrase. */
export interface LockRow {
  key: "lock";
  /** The format (settings.ts `LOCK_VERSION`); rows without it are refused. */
  v: number;
  salt: Uint8Array;
  iterations: number;
  /** A known text sealed with the key: opening it proves a passphrase right. */
  check: StoredText;
}

/** Who the user is: the namespace of their memories in the store. */
export interface UserRow {
  key: "user";
  id: string;
}

/** The model settings, JSON in a {@link StoredText}. */
export interface ModelRow {
  key: "model";
  value: StoredText;
}

/** The sync settings (server URL and token), JSON in a {@link StoredText}. */
export interface SyncRow {
  key: "sync";
  value: StoredText;
}

/**
 * Databases a lock change still has to delete (vault-migration.ts): written
 * with the lock record, removed once they are gone.
 */
export interface PendingDeletesRow {
  key: "pending-deletes";
  names: string[];
}

/**
 * A passphrase change under way (vault-key-change.ts): the lock before and after, and each lock's key
 * sealed by the other's, so either passphrase reaches both keys. Removed with the lock record's change.
 */
export interface KeyChangeRow {
  key: "key-change";
  /** This record's format. */
  v: 1;
  from: LockRow;
  to: LockRow;
  /** The key of `to`, sealed by the key of `from`. */
  toKey: StoredText;
  /** The key of `from`, sealed by the key of `to`. */
  fromKey: StoredText;
}

export type SettingRow = LockRow | UserRow | ModelRow | SyncRow | PendingDeletesRow | KeyChangeRow;

/** The demo's database name (the saver and the store have their own). */
export const DEMO_DB_NAME = "langgraph-demo";

export class DemoDB extends Dexie {
  threads!: EntityTable<ThreadRow, "id">;
  settings!: Table<SettingRow, SettingRow["key"]>;

  constructor() {
    super(DEMO_DB_NAME);
    this.version(1).stores({ threads: "id, updatedAt", settings: "key" });
  }

  /** Threads, most recently updated first, live in every tab. */
  liveThreads(): Observable<ThreadRow[]> {
    return liveQuery(() => this.threads.orderBy("updatedAt").reverse().toArray());
  }

  /** The lock record, live (another tab may lock or reset). */
  liveLock(): Observable<LockRow | undefined> {
    return liveQuery(() => this.lock());
  }

  async lock(): Promise<LockRow | undefined> {
    return (await this.settings.get("lock")) as LockRow | undefined;
  }

  /** The user's id, made on first use. */
  async userId(newId: () => string): Promise<string> {
    return this.transaction("rw", this.settings, async () => {
      const row = (await this.settings.get("user")) as UserRow | undefined;
      if (row) return row.id;
      const id = newId();
      await this.settings.put({ key: "user", id });
      return id;
    });
  }

  /** Marks a thread as just updated; creates its row when missing, if given a title. */
  async touch(id: string, title?: () => Promise<StoredText>, at = Date.now()): Promise<void> {
    const existing = await this.threads.get(id);
    if (existing) {
      if (at > existing.updatedAt) await this.threads.update(id, { updatedAt: at });
      return;
    }
    if (!title) return;
    const row: ThreadRow = { id, title: await title(), createdAt: at, updatedAt: at };
    // add, not put: another tab may have made the row meanwhile.
    await this.threads.add(row).catch((error: unknown) => {
      if ((error as { name?: string }).name !== "ConstraintError") throw error;
    });
  }
}

/**
 * The sidebar's "last updated", touched by the tab that writes (every tab sees it through liveQuery):
 * a thread's writes within 100 ms (a run's steps) touch it once, with `touch`.
 */
export function debouncedTouch(touch: (threadId: string) => Promise<void>) {
  const timers = new Map<string, ReturnType<typeof setTimeout>>();
  return {
    /** Touches the thread once its writes pause. */
    schedule(threadId: string): void {
      clearTimeout(timers.get(threadId));
      timers.set(
        threadId,
        setTimeout(() => {
          timers.delete(threadId);
          void touch(threadId).catch((e: unknown) => console.warn("touch", e));
        }, 100),
      );
    },
    /** Forgets a touch due (the thread is being deleted). */
    cancel(threadId: string): void {
      clearTimeout(timers.get(threadId));
      timers.delete(threadId);
    },
  };
}
