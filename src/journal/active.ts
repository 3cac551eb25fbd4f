/**
 * The active journal: recovery of the database from its records, the
 * append queue (one record per committed transaction, in commit order), and
 * compaction into one snapshot. Loaded with `import()` only when a journal
 * is enabled.
 */
import type { WriteOp } from "../idb/requests.js";
import { frameRecord, parseJournal } from "./format.js";
import {
  isEmpty,
  markSnapshot,
  markedSnapshot,
  newestReflected,
  reachedSnapshot,
  rangeSpec,
  recordCheck,
  isKeyRange,
  replay,
  snapshot,
  type Op,
  type Payload,
  type SchemaRules,
  type WriteGate,
} from "./raw.js";
import type { JournalBackend, RecoveryReport } from "./types.js";
import { joinBytes } from "../core/bytes.js";

// The saver's rules (saver/journal-adapter.ts, its own lazy chunk) read the raw connection with these:
// taken from here, not from raw.ts, so that the bundler keeps raw.ts in this chunk instead of splitting it
// into a third one (+254 B gzip measured) for the two chunks to share.
export { completion, request } from "./raw.js";

// The backends ride in this chunk (a journal always loads one with it): each in a chunk of its own cost one
// more request, and gzip's cold start and an import line in each (measured: docs/benchmarks.md, "Bundle").
export { MemoryJournalBackend } from "./memory-backend.js";
export { OpfsJournalBackend } from "./opfs-backend.js";

/** Options of {@link ActiveJournal}. */
export interface ActiveJournalOptions {
  name: string;
  stores: readonly string[];
  backend: JournalBackend;
  /** The database's current raw connection (it may have been reopened since recovery). */
  connection(): Promise<IDBDatabase>;
  /** Compact when the journal grows past this many bytes (and twice its last snapshot). */
  compactBytes: number;
  /**
   * Whether a put (of `row` to `store`) replaces material that must not stay
   * readable in older records (the saver's key record and tombstones): a
   * record holding one compacts the journal, as a record deleting rows does.
   */
  purgeOnPut: (store: string, row: unknown) => boolean;
  /** Told when an append or a compaction fails: the journal stops, the saver goes on. */
  onFail(error: unknown): void;
  /** Asked before each transaction replaying records (see `WriteGate`). */
  beforeWrite?: WriteGate;
}

/** What recovery needs from the seam. */
export interface RecoverOptions {
  /** This open created the database. */
  created: boolean;
  /** How many of the journal's last records `rules.resync` is given. */
  replayMargin: number;
  rules: SchemaRules;
  /** Whether the wipe marker says the database had held data (only asked when it was created). */
  wiped(): Promise<boolean>;
}

/** One journal file in use. */
export class ActiveJournal {
  readonly #options: ActiveJournalOptions;
  /** Journal writes run one after another, in commit order. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The journal is usable (opened, not failed). */
  #usable = false;
  #size = 0;
  #snapshotSize = 0;
  /** The generation of the journal's header (the one its snapshot's mark names). */
  #generation = 0;

  constructor(options: ActiveJournalOptions) {
    this.#options = options;
  }

  /** False once an append or a compaction failed. */
  get usable(): boolean {
    return this.#usable;
  }

  /** A write request as a journal operation. */
  toOp(op: WriteOp): Op {
    switch (op.kind) {
      case "put":
        return [op.store, 0, op.value];
      case "add":
        return [op.store, 1, op.value];
      case "delete":
        return isKeyRange(op.query) ? [op.store, 3, rangeSpec(op.query)] : [op.store, 2, op.query];
      case "clear":
        return [op.store, 4];
    }
  }

  /** Appends one committed transaction's operations (queued, in commit order). */
  append(ops: Op[]): Promise<void> {
    const bytes = frameRecord({ o: ops } satisfies Payload);
    const purge = ops.some((op) => op[1] > 1 || (op[1] === 0 && this.#options.purgeOnPut(op[0], op[2])));
    return this.#enqueue(async () => {
      if (!this.#usable) return;
      try {
        await this.#options.backend.append(bytes);
        this.#size += bytes.length;
      } catch (error) {
        this.#fail(error);
        return;
      }
      // A delete (or a key change) must not stay undone in older records, which
      // still hold the deleted rows (plaintext without encryption) or the
      // retired key: rewrite the journal as a snapshot of what is left. The
      // write's promise resolves after this, so nothing deleted is readable then.
      if (purge || (this.#size > this.#options.compactBytes && this.#size > 2 * this.#snapshotSize))
        await this.#compactNow();
    });
  }

  /** Rewrites the journal as one snapshot of the database (after the queued appends). */
  compact(): Promise<void> {
    return this.#enqueue(() => this.#compactNow());
  }

  /**
   * Starts the journal again with no records (after the appends queued):
   * the database was deleted, and nothing before it may come back.
   */
  restart(): Promise<void> {
    return this.#enqueue(() => this.#compactNow(false));
  }

  /** Waits for queued appends and releases the file. */
  async close(): Promise<void> {
    await this.#queue;
    this.#usable = false;
    await this.#options.backend.close().catch(() => undefined);
  }

  /** Rewrites the journal as its header and (`withSnapshot`) one snapshot of the database. */
  async #compactNow(withSnapshot = true): Promise<void> {
    if (!this.#usable) return;
    try {
      const db = withSnapshot ? await this.#options.connection() : undefined;
      const generation = this.#nextGeneration();
      const parts = [frameRecord({ h: generation, db: this.#options.name } satisfies Payload)];
      if (db) {
        await markSnapshot(db, generation);
        parts.push(frameRecord({ snap: await snapshot(db, this.#options.stores) } satisfies Payload));
      }
      const bytes = joinBytes(parts);
      await this.#options.backend.replace(bytes);
      this.#size = this.#snapshotSize = bytes.length;
    } catch (error) {
      this.#fail(error);
    }
  }

  /**
   * A generation no earlier header of this journal had: the time, or one past the last when the clock has
   * not moved (two compactions in one millisecond) or went back. The same number twice would let a database
   * holding the older snapshot's mark pass for one that reached the newer snapshot, and not be restored.
   */
  #nextGeneration(): number {
    this.#generation = Math.max(Date.now(), this.#generation + 1);
    return this.#generation;
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(task, task);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  #fail(error: unknown): void {
    this.#usable = false;
    this.#options.onFail(error);
  }

  /**
   * Opens the journal and brings `db` up to date with it; starts a journal
   * where there is none. The report's `elapsedMs` is the caller's to fill.
   */
  async recover(db: IDBDatabase, options: RecoverOptions): Promise<Omit<RecoveryReport, "elapsedMs">> {
    const { backend, stores, name } = this.#options;
    const base = { recoveredWrites: 0, journalRecords: 0, tornRecord: false, fromEmpty: false };
    let bytes: Uint8Array;
    try {
      bytes = await backend.open();
    } catch (error) {
      const wiped = await options.wiped();
      return { ...base, kind: wiped ? "wiped" : "journal-unavailable", fromEmpty: wiped, error };
    }
    // Not a journal of ours (no header first), or a record of a shape it never writes: corrupt from there.
    const parsed = parseJournal(bytes, recordCheck(db, stores));
    const records = parsed.records as Payload[];
    // Another database's journal (one custom backend given to two savers, a file copied under this name):
    // replaying it would put that database's rows in this one, and appending would corrupt it. Leave it be.
    const header = records[0] as { h: number; db?: unknown } | undefined;
    const owner = header?.db ?? name;
    if (owner !== name) {
      const error = new Error(
        `This journal is database "${owner}"'s, not "${name}"'s: left unread and unchanged, "${name}" runs without one. Give each saver its own.`,
      );
      return { ...base, kind: "journal-unavailable", error };
    }
    try {
      if (parsed.torn || (records.length === 0 && bytes.length > 0))
        await backend.truncate(records.length === 0 ? 0 : parsed.validLength);
    } catch (error) {
      return { ...base, kind: "journal-unavailable", error };
    }
    const body = records.slice(1);
    if (Number.isSafeInteger(header?.h)) this.#generation = header!.h;
    let size = records.length === 0 ? 0 : parsed.validLength;
    this.#snapshotSize = body[0] && "snap" in body[0] ? size : 0;

    // Where replay starts: after the newest record the database reflects. Not before it: a tab without this
    // journal may have deleted or overwritten since what those records wrote. A snapshot replays (clearing
    // every store first) only into a database that lacks its mark, which lost transactions, as after a wipe.
    const empty = options.created || (await isEmpty(db, stores));
    const reflected = empty ? -1 : await newestReflected(db, stores, body, options.rules.proof);
    const behind = reflected >= 0 && "snap" in body[reflected]! && !(await reachedSnapshot(db, header!.h));
    // Sealed under a key the database no longer has (another tab's rekey or changeKey): replayed, its rows
    // would put values no key opens over the ones re-encrypted. Replay nothing; rewrite the journal from the
    // database instead, so no retired key's ciphertext stays in its files either. The key is judged as of
    // the newest record the database reflects: one it lacks because the crash lost this tab's own key
    // change (and the database is behind its marked snapshot) is no other tab's, and the journal restores it.
    const lagging = behind && markedSnapshot(body[reflected]!, header!.h);
    const stale =
      !empty && !lagging && (await options.rules.stale(db, reflected >= 0 ? body.slice(0, reflected + 1) : body));
    const from = stale ? body.length : behind ? reflected : reflected + 1;
    // What the database lacked and gets back: records of threads another tab deleted since are left out
    // whole, and a report of their replay ("restored") would tell of nothing put back.
    const missing = body.length > from ? await options.rules.retain(db, body.slice(from), this.#generation) : [];
    const lost = missing.filter((record) => !("o" in record) || record.o.length > 0).length;
    if (lost > 0) await replay(db, stores, missing, this.#options.beforeWrite);
    // The other way round: transactions that committed but whose append the
    // crash cut off. They can only be the newest rows the journal's last
    // records wrote: the saver's resync journals those rows again, as they are now.
    let resync: Uint8Array | undefined;
    // What the journal holds once this recovery is done, after its header.
    let held: Payload[] = body;
    // A journal replayed from its snapshot, or stale, is rewritten from the database below.
    // So is one holding rows another tab deleted since (its deletes are not in it): a wipe would restore them.
    const rewrite =
      records.length === 0 || stale || behind || (!empty && (await options.rules.deletedSince(db, header!.h, body)));
    if (!empty && !rewrite) {
      const ops = await options.rules.resync(db, body.slice(-options.replayMargin));
      if (ops.length > 0) resync = frameRecord({ o: ops } satisfies Payload);
      if (ops.length > 0) held = [...body, { o: ops }];
    }

    // An empty journal: start it (with a snapshot when the database already holds data). One replayed from
    // its snapshot restarts from the database, under a mark it holds: at the next open, that snapshot would
    // again be missing its mark and clear what other tabs wrote since.
    if (rewrite) {
      const generation = this.#nextGeneration();
      const parts = [frameRecord({ h: generation, db: name } satisfies Payload)];
      held = [];
      if (!empty) {
        await markSnapshot(db, generation);
        held = [{ snap: await snapshot(db, stores) }];
        parts.push(frameRecord(held[0]));
      }
      const fresh = joinBytes(parts);
      try {
        await backend.replace(fresh);
      } catch (error) {
        return { ...base, kind: "journal-unavailable", error };
      }
      size = fresh.length;
      this.#snapshotSize = size;
    }
    if (resync) {
      try {
        await backend.append(resync);
      } catch (error) {
        return { ...base, kind: "journal-unavailable", error };
      }
      size += resync.length;
    }
    this.#size = size;
    this.#usable = true;
    // Housekeeping: a failure leaves the marks, which only cost their rows.
    await options.rules.settled(db, held).catch(() => undefined);
    const fromEmpty = empty && body.length > 0;
    // A database that had data, with neither it nor the journal holding any now.
    const wiped = options.created && body.length === 0 && (await options.wiped());
    return {
      kind: wiped ? "wiped" : lost > 0 ? "restored" : "ok",
      fromEmpty: fromEmpty || wiped,
      recoveredWrites: lost,
      journalRecords: body.length,
      tornRecord: parsed.torn,
    };
  }
}
