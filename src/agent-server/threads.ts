/**
 * The Agent Server's thread records (id, metadata, status, timestamps) in
 * IndexedDB. They live in a database of their own beside the saver's
 * (`<saver dbName>-agent-threads` by default), so the saver's schema and
 * format stay untouched and the records can be dropped without touching a
 * checkpoint. Metadata is kept as structured-cloned JSON and searched by
 * JSON containment, as the Agent Server does.
 */
import type { Database } from "../idb/database.js";
import { sameClone } from "../core/equality.js";
import { isPlainObject } from "../core/guards.js";
import { openAgentDatabase, type AgentSchema, type ThreadRow } from "./schema.js";
import type { ThreadMetadata, ThreadRecord, ThreadStatus } from "./records.js";

export type { ThreadMetadata, ThreadRecord, ThreadStatus } from "./records.js";

/** Options of {@link AgentThreadStore.search}. */
export interface ThreadSearchOptions {
  /** Only these threads (any order); all when absent. */
  ids?: readonly string[];
  /** The thread's metadata must contain it (JSON containment, as PostgreSQL's `jsonb @>`). */
  metadata?: ThreadMetadata;
  status?: ThreadStatus;
  limit: number;
  offset: number;
  /** As the Agent Server sorts: `status` by its name, like `thread_id`. */
  sortBy: "created_at" | "updated_at" | "thread_id" | "status";
  sortOrder: "asc" | "desc";
}

/**
 * Where `createLocalAgentServer` keeps thread records: an
 * {@link IndexedDBThreadStore} by default, or any object with these methods.
 */
export interface AgentThreadStore {
  get(threadId: string): Promise<ThreadRecord | undefined>;
  /** Creates the thread, or returns the existing one unchanged. */
  create(threadId: string, metadata: ThreadMetadata): Promise<{ thread: ThreadRecord; created: boolean }>;
  /** Merges `metadata` into the thread's (and sets `status` if given); undefined if there is no such thread. */
  patch(
    threadId: string,
    changes: { metadata?: ThreadMetadata; status?: ThreadStatus },
  ): Promise<ThreadRecord | undefined>;
  delete(threadId: string): Promise<boolean>;
  search(options: ThreadSearchOptions): Promise<{ threads: ThreadRecord[]; total: number }>;
  close(): Promise<void>;
}

/** Options of {@link IndexedDBThreadStore}. */
export interface IndexedDBThreadStoreParams {
  /** The database name, e.g. `"langgraph-agent-threads"`. */
  dbName: string;
  /** An `IDBFactory`; default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
}

/** The seqs a new thread's can follow: numbers that stay exact one above. */
const SEQ_MIN = Number.MIN_SAFE_INTEGER;
const SEQ_MAX = Number.MAX_SAFE_INTEGER - 1;

/** Thread records in an IndexedDB database of their own. */
export class IndexedDBThreadStore implements AgentThreadStore {
  readonly #db: Database<AgentSchema>;

  constructor(params: IndexedDBThreadStoreParams) {
    this.#db = openAgentDatabase(params.dbName, params.indexedDB);
  }

  /** The database name. */
  get dbName(): string {
    return this.#db.name;
  }

  /** The thread record, or undefined. */
  async get(threadId: string): Promise<ThreadRecord | undefined> {
    const row = await this.#db.read(["threads"], (tx) => tx.objectStore("threads").get(threadId), "read a thread");
    return row && toRecord(row);
  }

  /** Creates the thread, or returns the one already there. */
  create(threadId: string, metadata: ThreadMetadata): Promise<{ thread: ThreadRecord; created: boolean }> {
    const now = new Date().toISOString();
    return this.#db.write(
      ["threads"],
      async (tx) => {
        const threads = tx.objectStore("threads");
        const existing = await threads.get(threadId);
        if (existing) return { thread: toRecord(existing), created: false };
        // The highest seq one can be added to: a row edited on disk may hold a string there (it
        // sorts after every number, and `+ 1` appended to it: each new row's seq one character
        // longer than the last, a 1 MB one copied into every new thread), or Infinity or 1e300
        // (`+ 1` left them as they were: every new thread tied, in no order).
        const last = await threads.index("seq").openCursor(this.#db.ranges.bound(SEQ_MIN, SEQ_MAX), "prev");
        const row: ThreadRow = {
          thread_id: threadId,
          created_at: now,
          updated_at: now,
          metadata,
          status: "idle",
          seq: (last?.value.seq ?? 0) + 1,
        };
        await threads.put(row);
        return { thread: toRecord(row), created: true };
      },
      "create a thread",
    );
  }

  /** Merges metadata and sets the status; undefined if the thread does not exist. */
  patch(
    threadId: string,
    changes: { metadata?: ThreadMetadata; status?: ThreadStatus },
  ): Promise<ThreadRecord | undefined> {
    const now = new Date().toISOString();
    return this.#db.write(
      ["threads"],
      async (tx) => {
        const threads = tx.objectStore("threads");
        const existing = await threads.get(threadId);
        if (!existing) return undefined;
        const next: ThreadRow = {
          ...existing,
          metadata: { ...metadataOf(existing), ...changes.metadata },
          status: changes.status ?? existing.status,
          updated_at: now,
        };
        await threads.put(next);
        return toRecord(next);
      },
      "update a thread",
    );
  }

  /** Deletes the record; false if there was none. */
  delete(threadId: string): Promise<boolean> {
    return this.#db.write(
      ["threads"],
      async (tx) => {
        const threads = tx.objectStore("threads");
        if ((await threads.count(threadId)) === 0) return false;
        await threads.delete(threadId);
        return true;
      },
      "delete a thread",
    );
  }

  /** The threads matching `options`, sorted and paged, and how many match in all. */
  async search(options: ThreadSearchOptions): Promise<{ threads: ThreadRecord[]; total: number }> {
    const all = await this.#db.read(["threads"], (tx) => tx.objectStore("threads").getAll(), "search threads");
    const ids = options.ids && new Set(options.ids);
    const matching = all.filter(
      (thread) =>
        // A row keyed by no string (edited on disk: 5, ["x"], a Date) names no thread a client can
        // ask for: listed, it could never be read, run or deleted (every route 404).
        typeof thread.thread_id === "string" &&
        (ids === undefined || ids.has(thread.thread_id)) &&
        (options.status === undefined || thread.status === options.status) &&
        containsJson(metadataOf(thread), options.metadata ?? {}),
    );
    const direction = options.sortOrder === "asc" ? 1 : -1;
    const key = options.sortBy;
    // Ties (same millisecond) fall back to the order of creation (`seq`): thread ids are random
    // UUIDs, so ordering ties by id put two threads created in one millisecond in either order.
    matching.sort((a, b) => direction * (compare(a[key], b[key]) || a.seq - b.seq));
    const page = matching.slice(options.offset, options.offset + options.limit);
    return { threads: page.map(toRecord), total: matching.length };
  }

  /** Closes the connection. */
  close(): Promise<void> {
    return this.#db.close();
  }
}

function toRecord({ seq: _seq, ...record }: ThreadRow): ThreadRecord {
  return { ...record, metadata: metadataOf(record) };
}

/**
 * A stored thread's metadata; none when the row holds no JSON object there
 * (edited on disk). Taken as it was, a null one answered its thread 500
 * (TypeError), and search and count left the thread out.
 */
function metadataOf(row: ThreadRecord): ThreadMetadata {
  const metadata: unknown = row.metadata;
  return isPlainObject(metadata) ? (metadata as ThreadMetadata) : {};
}

/**
 * Whether JSON `have` contains `want`, as PostgreSQL's `jsonb @>` (the Agent
 * Server's metadata filter): an object contains each key of `want` with a
 * contained value, an array contains each element of `want` in some element,
 * anything else equals.
 */
export function containsJson(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return Array.isArray(have) && want.every((item) => have.some((held) => containsJson(held, item)));
  }
  if (typeof want === "object" && want !== null) {
    if (typeof have !== "object" || have === null || Array.isArray(have)) return false;
    return Object.entries(want).every(
      ([key, value]) => Object.hasOwn(have, key) && containsJson((have as Record<string, unknown>)[key], value),
    );
  }
  return sameClone(have, want);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
