/**
 * The threads of thread-less runs (`on_completion: "delete"`) whose delete
 * failed once the run ended. The run reports the failure (stateless-runs.ts,
 * runs.ts); the thread is deleted again here, later, until a delete succeeds,
 * rather than left for good with its checkpoints. Each is recorded in the
 * agent server's database before its first delete, so a server closed first
 * (a reload) does not forget it: the next server to start deletes it.
 */
import type { Database } from "../idb/database.js";
import type { AgentSchema, LeftoverRow } from "./schema.js";

/** The first wait before a thread is deleted again; each failure doubles it, up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

/**
 * Deletes threads again after a failed delete: after 1 s, then twice as
 * long after each failure (at most a minute), while the server is open,
 * and once more when it closes.
 */
export class LeftoverThreads {
  readonly #delete: (threadId: string) => Promise<void>;
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Deletes under way, waited for at close. */
  readonly #deleting = new Set<Promise<void>>();
  #closed = false;

  constructor(deleteThread: (threadId: string) => Promise<void>) {
    this.#delete = deleteThread;
  }

  /** Deletes `threadId` again after `wait` ms, and on until a delete succeeds. */
  add(threadId: string, wait = RETRY_FIRST_MS): void {
    if (this.#closed) return;
    clearTimeout(this.#timers.get(threadId));
    const timer = setTimeout(() => {
      this.#timers.delete(threadId);
      this.#track(this.#delete(threadId).catch(() => this.add(threadId, Math.min(wait * 2, RETRY_MAX_MS))));
    }, wait);
    this.#timers.set(threadId, timer);
  }

  /** Deletes `threadId` no more: it was deleted (a thread created again under its id is another's). */
  forget(threadId: string): void {
    clearTimeout(this.#timers.get(threadId));
    this.#timers.delete(threadId);
  }

  /**
   * Stops the retries after one last delete of each thread left; one that
   * fails then stays (its run reported it; `threads.delete` deletes it).
   */
  async close(): Promise<void> {
    this.#closed = true;
    const left = [...this.#timers.keys()];
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    for (const threadId of left) this.#track(this.#delete(threadId).catch(() => undefined));
    while (this.#deleting.size > 0) await Promise.all(this.#deleting);
  }

  #track(deleting: Promise<void>): void {
    this.#deleting.add(deleting);
    void deleting.finally(() => this.#deleting.delete(deleting));
  }
}

/** The leftover threads recorded in one agent server database (its `leftover_threads` store). */
export class LeftoverRecords {
  readonly #db: Database<AgentSchema>;

  constructor(db: Database<AgentSchema>) {
    this.#db = db;
  }

  /** Records `threadId`, created at `createdAt` (its record's), before its first delete. */
  add(threadId: string, createdAt: string): Promise<void> {
    const row: LeftoverRow = { thread_id: threadId, created_at: createdAt };
    return this.#db.write(
      ["leftover_threads"],
      (tx) => void tx.objectStore("leftover_threads").put(row),
      "record a leftover thread",
      true,
    );
  }

  /** The record of `threadId`, or undefined. */
  get(threadId: string): Promise<LeftoverRow | undefined> {
    return this.#db.read(
      ["leftover_threads"],
      (tx) => tx.objectStore("leftover_threads").get(threadId),
      "read a leftover thread",
    );
  }

  /** Every record. */
  list(): Promise<LeftoverRow[]> {
    return this.#db.read(
      ["leftover_threads"],
      (tx) => tx.objectStore("leftover_threads").getAll(),
      "list leftover threads",
    );
  }

  /** Removes the record of `threadId` (deleted, or found created again under its id by a sweep). */
  remove(threadId: string): Promise<void> {
    return this.#db.write(
      ["leftover_threads"],
      (tx) => void tx.objectStore("leftover_threads").delete(threadId),
      "forget a leftover thread",
    );
  }
}

/** What a sweep of the leftover records uses of the server. */
export interface SweepContext {
  records: LeftoverRecords;
  /** Runs `work` holding the thread's run lock; rejects (ThreadBusyError) at once while a run holds it. */
  whileIdle(threadId: string, work: () => Promise<void>): Promise<void>;
  /** The creation time of the thread's record, or undefined without one. */
  createdAt(threadId: string): Promise<string | undefined>;
  /** Deletes the thread's checkpoints, runs and record, and its leftover record. */
  erase(threadId: string): Promise<void>;
}

/**
 * Deletes the threads the records list (left by a server closed before their
 * delete succeeded, in this tab or another), each holding its run lock and
 * only while no run holds it: a thread a run of any tab uses is left for the
 * next start. Only the thread recorded is deleted: one deleted since (no
 * record) or created again under its id (another creation time) stays, and
 * its leftover record goes, as does a record with no creation time (damaged).
 * A delete that fails leaves the record.
 */
export async function sweepLeftovers(context: SweepContext): Promise<void> {
  for (const { thread_id: threadId } of await context.records.list()) {
    await context
      .whileIdle(threadId, async () => {
        // Read again under the lock: the record may have gone with a delete since the list.
        const recorded = await context.records.get(threadId);
        if (!recorded) return;
        // A record without its time (a row edited on disk) proves no thread: a thread with no record
        // has none either, and undefined equalled undefined, erasing checkpoints no run had left.
        const recordedAt: unknown = recorded.created_at;
        if (typeof recordedAt === "string" && (await context.createdAt(threadId)) === recordedAt)
          await context.erase(threadId);
        else await context.records.remove(threadId);
      })
      .catch(() => undefined);
  }
}
