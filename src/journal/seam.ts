/**
 * The journal's side of the database seam: recovery before the connection's
 * first transaction, the wipe marker, and (when a journal is enabled) the
 * recording of every committed write. Small and always loaded; the journal
 * itself (active.ts) and the OPFS backend load with `import()` only when
 * `journal` is not `"off"`.
 */
import type { DatabaseSeam } from "../idb/database.js";
import type { WriteObserver } from "../idb/requests.js";
import type { ActiveJournal } from "./active.js";
import type { Op, SchemaRules, WriteGate } from "./raw.js";
import {
  DatabaseWipedError,
  type JournalBackend,
  type JournalOption,
  type RecoveryReport,
  type WipeMarker,
} from "./types.js";
import { defaultMarker, noteMarkerWrite } from "./wipe-marker.js";
import { loadOnce } from "../core/tasks.js";

/** The journal itself and its backends (one chunk), loaded when a journal is enabled. */
const activeModule = loadOnce(() => import("./active.js"));

/** Options of {@link JournalSeam}. */
export interface JournalSeamOptions {
  /** The database name (names the journal file and the marker). */
  name: string;
  /** The stores to journal, in snapshot order. */
  stores: readonly string[];
  /** The journal, or `"off"` (the default: only the wipe marker). */
  journal?: JournalOption;
  /** What to do when a wiped database cannot be restored. Default `"report"`. */
  onWipe?: "report" | "throw";
  /** Told once what the open found (see {@link RecoveryReport}). */
  onRecovery?: (report: RecoveryReport) => void;
  /** The marker; defaults to {@link defaultMarker}. */
  marker?: WipeMarker;
  /** Compact when the journal grows past this many bytes (and twice its last snapshot). Default 8 MiB. */
  compactBytes?: number;
  /** How many of the journal's last records the resync after a recovery reads. Default 16. */
  replayMargin?: number;
  /** The saver's rules for a recovery (loaded only when a journal is on). */
  rules(): Promise<SchemaRules>;
  /**
   * Asked before each transaction of a recovery's replay, as the database asks before its own writes
   * (the saver's write lease: a saver in another tab answering reads from memory drops them first).
   */
  beforeWrite?: WriteGate;
}

/** Recovery and journaling for one database, through its seam. */
export class JournalSeam implements DatabaseSeam {
  readonly #options: JournalSeamOptions;
  readonly #marker: WipeMarker;
  #open: (() => Promise<IDBDatabase>) | undefined;
  /** Set when an upgrade created the database (opened from version 0). */
  #created = false;
  #ready: Promise<RecoveryReport> | undefined;
  #report: RecoveryReport | undefined;
  #active: ActiveJournal | undefined;
  #markerSet = false;
  /** The marker's write, in the background after the first commit: `close()` waits for it. */
  #markerWrite: Promise<unknown> | undefined;

  constructor(options: JournalSeamOptions) {
    this.#options = options;
    this.#marker = options.marker ?? defaultMarker(options.name);
  }

  /** How to reach the raw connection without passing through the seam (set once by the database's owner). */
  attach(open: () => Promise<IDBDatabase>): void {
    this.#open = open;
  }

  created(): void {
    this.#created = true;
  }

  async beforeUse(): Promise<void> {
    const report = await this.recovery();
    if (report.kind === "wiped" && this.#options.onWipe === "throw") throw new DatabaseWipedError(report);
  }

  /** What the open found; opens the database (and recovers) if needed. */
  recovery(): Promise<RecoveryReport> {
    this.#ready ??= this.#recover().then(
      (report) => {
        this.#report = report;
        try {
          this.#options.onRecovery?.(report);
        } catch (error) {
          queueMicrotask(() => {
            throw error;
          });
        }
        return report;
      },
      (error: unknown) => {
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }

  observeWrites(): WriteObserver | undefined {
    const active = this.#active?.usable ? this.#active : undefined;
    if (!active && this.#markerSet) return undefined; // nothing to record: no cost per request
    const ops: Op[] = [];
    return {
      record: active ? (op) => ops.push(active.toOp(op)) : () => undefined,
      committed: () => {
        this.#setMarker();
        return active && ops.length > 0 ? active.append(ops) : Promise.resolve();
      },
    };
  }

  /**
   * Another tab deletes the database while this saver has it open (its
   * `deleteSaverDatabase`, which cannot remove the journal this saver holds):
   * the journal starts again empty, or the next open would restore what was
   * deleted, and the wipe marker is set again at the next write.
   */
  deleting(): void {
    this.#markerSet = false;
    void this.#active?.restart();
  }

  /**
   * Rewrites an open journal as one snapshot of the database now (another
   * tab deleted rows or changed the key: the journal's older records still
   * hold them); nothing when no journal is open.
   */
  purge(): Promise<void> {
    return this.#active?.usable ? this.#active.compact() : Promise.resolve();
  }

  /** Rewrites the journal as one snapshot of the database. */
  async compact(): Promise<void> {
    await this.recovery();
    if (this.#active) await this.#active.compact();
  }

  async close(): Promise<void> {
    const ready = this.#ready;
    this.#ready = undefined;
    await ready?.catch(() => undefined);
    const active = this.#active;
    this.#active = undefined;
    this.#created = false;
    // Closed means done: a marker landing later would outlive a deleteSaverDatabase made next.
    await Promise.all([active?.close(), this.#markerWrite]);
  }

  #setMarker(): void {
    if (this.#markerSet) return;
    this.#markerSet = true;
    const write = this.#marker.set().catch(() => (this.#markerSet = false));
    this.#markerWrite = write;
    noteMarkerWrite(this.#options.name, write);
  }

  #raw(): Promise<IDBDatabase> {
    if (!this.#open) throw new Error("JournalSeam: attach() was not called");
    return this.#open();
  }

  /** A later failure of the journal: the saver goes on without it, and says so. */
  #fail(error: unknown): void {
    const report: RecoveryReport = {
      ...(this.#report ?? { fromEmpty: false, recoveredWrites: 0, journalRecords: 0, tornRecord: false, elapsedMs: 0 }),
      kind: "journal-unavailable",
      error,
    };
    this.#report = report;
    try {
      this.#options.onRecovery?.(report);
    } catch {
      // A listener's failure must not hide the journal's.
    }
  }

  async #recover(): Promise<RecoveryReport> {
    const started = now();
    const db = await this.#raw();
    const created = this.#created;
    const wiped = () => (created ? this.#marker.has().catch(() => false) : Promise.resolve(false));
    const journal = this.#options.journal ?? "off";
    if (journal === "off") {
      const isWiped = await wiped();
      return {
        kind: isWiped ? "wiped" : "ok",
        fromEmpty: isWiped,
        recoveredWrites: 0,
        journalRecords: 0,
        tornRecord: false,
        elapsedMs: now() - started,
      };
    }
    // The journal's code, both backends and the OPFS worker load only now, when enabled (one chunk).
    const { ActiveJournal, MemoryJournalBackend, OpfsJournalBackend } = await activeModule();
    const backend: JournalBackend =
      journal === "memory"
        ? new MemoryJournalBackend(this.#options.name)
        : journal === "opfs"
          ? new OpfsJournalBackend(this.#options.name)
          : journal;
    const rules = await this.#options.rules();
    const active = new ActiveJournal({
      name: this.#options.name,
      stores: this.#options.stores,
      backend,
      connection: () => this.#raw(),
      compactBytes: this.#options.compactBytes ?? 8 * 1024 * 1024,
      purgeOnPut: rules.purgeOnPut,
      onFail: (error) => this.#fail(error),
      beforeWrite: this.#options.beforeWrite,
    });
    const outcome = await active.recover(db, {
      created,
      replayMargin: this.#options.replayMargin ?? 16,
      rules,
      wiped,
    });
    if (outcome.kind !== "journal-unavailable") this.#active = active;
    else await active.close();
    return { ...outcome, elapsedMs: now() - started };
  }
}

function now(): number {
  return typeof performance !== "undefined" ? performance.now() : Date.now();
}
