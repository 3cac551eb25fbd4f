/**
 * Group commit for the saver's writes.
 *
 * A graph run calls `put` and `putWrites` in quick succession (LangGraph
 * chains its puts and fires each task's writes as it finishes), and each
 * IndexedDB transaction costs a commit. Writes queued while a transaction is
 * in flight go out together in the next one: fewer commits, and each promise
 * still resolves only once its own data is committed. An idle batcher starts
 * at once (after the current microtasks), so a lone write waits for nothing:
 * measured in Chromium, waiting a whole task instead doubled a lone put.
 *
 * A write that usually comes just before another one (a task's pending
 * writes, before the checkpoint of its superstep) can say so: when only such
 * writes are queued, the batcher waits one task for the other to join them,
 * which LangGraph's microtask chain reaches by then, so they share a commit.
 *
 * Writes run in call order. If a shared transaction fails (one write's error,
 * or a deliberate abort such as a late write to a deleted thread), it rolled
 * back every write in it, so each one is run again in a transaction of its
 * own and gets its own outcome.
 *
 * A write may carry a note that every write sharing its transaction is
 * shown (`notes`): a check one of them makes in the transaction (say, that
 * a checkpoint exists) then need not be made again by the others, since a
 * failed check aborts the shared transaction and each write runs alone.
 */
import type { DBSchema, StoreNames } from "idb";
import type { Database, Tx } from "./database.js";
import { nextTask } from "../core/tasks.js";

/**
 * Work of one queued write: {@link TxWork} plus the notes of every write
 * sharing its transaction (its own among them, in call order; undefined
 * for writes without one).
 */
export type BatchWork<Schema extends DBSchema, Note, R> = (
  tx: Tx<Schema, "readwrite">,
  notes: readonly (Note | undefined)[],
) => Promise<R> | R;

/** One queued write. */
interface Job<Schema extends DBSchema, Note> {
  stores: StoreNames<Schema>[];
  work: BatchWork<Schema, Note, unknown>;
  /** Shown to every write of its transaction (see the module's note). */
  note: Note | undefined;
  action: string;
  /** May share a transaction with its neighbours. */
  mergeable: boolean;
  /** Usually followed by a write it can share a transaction with. */
  leads: boolean;
  /** Removes and changes nothing others rely on (see `Database.write`). */
  additive: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Queues writes to one database and commits neighbours together.
 * @internal
 */
export class WriteBatcher<Schema extends DBSchema, Note = never> {
  readonly #db: Database<Schema>;
  readonly #queue: Job<Schema, Note>[] = [];
  #busy = false;

  constructor(db: Database<Schema>) {
    this.#db = db;
  }

  /**
   * Runs `work` in a read-write transaction over `stores`, possibly shared
   * with other mergeable writes; resolves once that transaction commits.
   * `work` must only issue requests on the transaction, and must be safe to
   * run twice (the retry after a shared transaction failed). `leads`: the
   * write is usually followed at once by another (see the module's note).
   * `note`: shown to `work` of every write sharing the transaction; a write
   * that notes a check must make it, and fail the transaction when it fails.
   * `additive`: see `Database.write`; a shared transaction is additive only
   * if every write in it is.
   */
  write<R>(
    stores: StoreNames<Schema>[],
    work: BatchWork<Schema, Note, R>,
    action: string,
    mergeable = true,
    leads = false,
    note?: Note,
    additive = false,
  ): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({
        stores,
        work,
        note,
        action,
        mergeable,
        leads: mergeable && leads,
        additive,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#busy) return;
    this.#busy = true;
    // Idle: go after this task's microtasks, so writes issued together (a
    // Promise.all of them) share a transaction, without a task's delay.
    queueMicrotask(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        // Only leading writes queued: give the write that follows them one
        // task to join (a lone one pays that task, about 0.1 ms).
        if (this.#queue.every((job) => job.leads)) await nextTask();
        const first = this.#queue[0]!;
        let count = 1;
        if (first.mergeable) {
          while (count < this.#queue.length && this.#queue[count]!.mergeable) count += 1;
        }
        const batch = this.#queue.splice(0, count);
        if (batch.length === 1) await this.#runAlone(batch[0]!);
        else await this.#runTogether(batch);
      }
    } finally {
      this.#busy = false;
      if (this.#queue.length > 0) this.#schedule();
    }
  }

  async #runAlone(job: Job<Schema, Note>): Promise<void> {
    const notes = [job.note];
    try {
      job.resolve(await this.#db.write(job.stores, (tx) => job.work(tx, notes), job.action, job.additive));
    } catch (error) {
      job.reject(error);
    }
  }

  async #runTogether(batch: Job<Schema, Note>[]): Promise<void> {
    const stores = [...new Set(batch.flatMap((job) => job.stores))];
    const notes = batch.map((job) => job.note);
    let results: unknown[];
    try {
      results = await this.#db.write(
        stores,
        // Every job starts in this tick, in call order, so their requests
        // go out in that order.
        (tx) => Promise.all(batch.map((job) => job.work(tx, notes))),
        `${batch[0]!.action} (with ${batch.length - 1} more writes)`,
        batch.every((job) => job.additive),
      );
    } catch {
      // The shared transaction rolled back all of them: one each.
      for (const job of batch) await this.#runAlone(job);
      return;
    }
    batch.forEach((job, i) => job.resolve(results[i]));
  }
}
