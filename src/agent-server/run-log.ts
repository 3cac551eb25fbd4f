/**
 * Run records and their stream events in the agent server's database, so
 * that a server in another tab, or in this tab after a reload, can report a
 * run and replay what it streamed. The server running a run writes its
 * events in batches (one transaction per batch, not per token) and its final
 * record together with the last events, so a finished record always comes
 * with every event of its run.
 */
import type { Database, Tx } from "../idb/database.js";
import type { RunRecord, SentEvent } from "./records.js";
import type { AgentSchema } from "./schema.js";
import { eventSealing, type EventSealing } from "./event-seal.js";

/** The statuses a run ends with. */
const FINAL = new Set<RunRecord["status"]>(["success", "error", "interrupted"]);

/** Whether `record` is the final record of its run. */
export function isFinal(record: RunRecord): boolean {
  return FINAL.has(record.status);
}

/** A run's events as a replay reads them from the log ({@link RunLog.stored}). */
export interface StoredEvents {
  /** The events that open, in order. */
  events: SentEvent[];
  /** The highest id of the run's rows, read or left out; -1 when it has none (its events pruned). */
  lastId: number;
  /**
   * The id of a row named `error` that was left out (sealed under a data key
   * `rekey` or `changeKey` has since retired, or edited): the run stored an
   * error event whose details cannot be read.
   */
  errorLeftOut: number | undefined;
}

/** How many of a thread's newest runs keep their events, unless a server says otherwise. */
export const KEEP_RUN_EVENTS = 50;

/** Run records and events of one agent server database. */
export class RunLog {
  readonly #db: Database<AgentSchema>;
  readonly #keepEventsOf: number;
  readonly #sealing: EventSealing;

  /**
   * @param keepEventsOf How many of a thread's newest runs keep their events:
   *   when a run ends, the events of the thread's older finished runs are
   *   deleted (their records stay). A run not finished keeps its events.
   * @param sealing How events are stored (event-seal.ts): sealed beside an encrypting saver; default in clear.
   */
  constructor(
    db: Database<AgentSchema>,
    keepEventsOf = KEEP_RUN_EVENTS,
    sealing: EventSealing = eventSealing(undefined, db.name),
  ) {
    if (!Number.isInteger(keepEventsOf) || keepEventsOf < 1)
      throw new Error(
        `createLocalAgentServer: keepRunEvents must be a whole number of runs, 1 or more; got ${keepEventsOf}.`,
      );
    this.#db = db;
    this.#keepEventsOf = keepEventsOf;
    this.#sealing = sealing;
  }

  /**
   * Writes `record` and `events` (events already written are written again,
   * unchanged) in one transaction; a final record also prunes the events of
   * the thread's runs beyond the newest `keepEventsOf`. Events are sealed
   * (when the saver encrypts) before the transaction opens.
   */
  async save(record: RunRecord, events: readonly SentEvent[]): Promise<void> {
    const rows = await this.#sealing.rows(record.run_id, events);
    return this.#db.write(
      ["runs", "run_events"],
      async (tx) => {
        const runs = tx.objectStore("runs");
        const store = tx.objectStore("run_events");
        void runs.put(record);
        for (const row of rows) void store.put(row);
        if (!isFinal(record)) return;
        const older = newestFirst(await runs.index("thread_id").getAll(record.thread_id)).slice(this.#keepEventsOf);
        for (const run of older) {
          if (isFinal(run)) void store.delete(this.#db.ranges.bound([run.run_id, -Infinity], [run.run_id, Infinity]));
        }
      },
      "save a run",
    );
  }

  /** The run's record, or undefined. */
  get(runId: string): Promise<RunRecord | undefined> {
    return this.#db.read(["runs"], (tx) => tx.objectStore("runs").get(runId), "read a run");
  }

  /** The records of the thread's runs, newest first. */
  async list(threadId: string): Promise<RunRecord[]> {
    const records = await this.#db.read(
      ["runs"],
      (tx) => tx.objectStore("runs").index("thread_id").getAll(threadId),
      "list runs",
    );
    return newestFirst(records.filter(namesRun));
  }

  /**
   * The records of every thread's runs that have not ended (the status of `runs.cancelMany`), in run id
   * order: read through the status index, so the finished runs, however many, are not read.
   */
  async unfinished(): Promise<RunRecord[]> {
    const records = await this.#db.read(
      ["runs"],
      async (tx) => {
        const byStatus = tx.objectStore("runs").index("status");
        const [pending, running] = await Promise.all([byStatus.getAll("pending"), byStatus.getAll("running")]);
        return [...pending, ...running].filter(namesRun);
      },
      "list runs not ended",
    );
    return records.sort((a, b) => compare(a.run_id, b.run_id));
  }

  /**
   * What a replay of the run reads: its stored events, in order (a row of a
   * shape this log never writes, edited on disk, or one that does not open
   * beside an encrypting saver, event-seal.ts, is left out), and what it must
   * know of the rows left out, so that it can tell a failed run whose error
   * event does not open from a run cut short.
   */
  async stored(runId: string): Promise<StoredEvents> {
    const range = this.#db.ranges.bound([runId, -1], [runId, Infinity], true);
    const rows = await this.#db.read(
      ["run_events"],
      (tx) => tx.objectStore("run_events").getAll(range),
      "read a run's events",
    );
    const events = (await this.#sealing.events(rows)).filter(isSentEvent);
    const opened = new Set(events.map((event) => event.id));
    // A row's id and name are kept clear (event-seal.ts): known even when its data does not open.
    // A loop, not Math.max(...ids): a long run's token events pass the arguments an engine takes in one call.
    let lastId = -1;
    for (const row of rows) if (Number.isSafeInteger(row.id) && row.id > lastId) lastId = row.id;
    const errorLeftOut = rows.find((row) => row.event === "error" && !opened.has(row.id));
    return {
      events,
      lastId,
      errorLeftOut: errorLeftOut !== undefined && Number.isSafeInteger(errorLeftOut.id) ? errorLeftOut.id : undefined,
    };
  }

  /**
   * Resolves once the run's events can be read: rejects with the saver's
   * `KeyChangedError` when another tab changed its key and this tab's no
   * longer opens the database (a replay would fail part-way).
   */
  readable(): Promise<void> {
    return this.#sealing.ready();
  }

  /** Sets a run's record to `record` if it is not final yet; the record now stored. */
  settle(record: RunRecord): Promise<RunRecord> {
    return this.#db.write(
      ["runs"],
      async (tx) => {
        const runs = tx.objectStore("runs");
        const stored = await runs.get(record.run_id);
        if (stored && isFinal(stored)) return stored;
        await runs.put(record);
        return record;
      },
      "settle a run",
    );
  }

  /** Deletes every run of the thread and their events. */
  deleteThread(threadId: string): Promise<void> {
    return this.#db.write(
      ["runs", "run_events"],
      async (tx) => {
        const runIds = await tx.objectStore("runs").index("thread_id").getAllKeys(threadId);
        for (const runId of runIds) this.#deleteIn(tx, runId);
      },
      "delete a thread's runs",
    );
  }

  /** Deletes one run and its events. */
  deleteRun(runId: string): Promise<void> {
    return this.#db.write(["runs", "run_events"], (tx) => this.#deleteIn(tx, runId), "delete a run");
  }

  #deleteIn(tx: Tx<AgentSchema, "readwrite">, runId: string): void {
    void tx.objectStore("runs").delete(runId);
    void tx.objectStore("run_events").delete(this.#db.ranges.bound([runId, -Infinity], [runId, Infinity]));
  }

  /** Closes the connection. */
  close(): Promise<void> {
    return this.#db.close();
  }
}

/**
 * Whether a stored row is an event as a run sent it: a whole-number id, a
 * name and JSON text, neither with a line break. Another row, sent as it is,
 * broke the stream: the SDK failed to parse it and asked again 5 times, then
 * gave up with no event; a line break in it framed events of its own.
 */
function isSentEvent(sent: SentEvent): boolean {
  const { id, event, data } = sent as { id: unknown; event: unknown; data: unknown };
  if (!Number.isSafeInteger(id) || typeof event !== "string" || typeof data !== "string") return false;
  if (/[\r\n]/.test(event) || /[\r\n]/.test(data)) return false;
  try {
    JSON.parse(data);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a stored record is keyed by a run id a client can ask for. One
 * edited on disk to another key (5, ["x"]) was listed among its thread's
 * runs, while every run route answered it 404.
 */
function namesRun(record: RunRecord): boolean {
  return typeof record.run_id === "string";
}

function newestFirst(records: RunRecord[]): RunRecord[] {
  return records.sort((a, b) => compare(b.created_at, a.created_at) || compare(b.run_id, a.run_id));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
