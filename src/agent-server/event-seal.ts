/**
 * Run events beside an encrypting saver: a run's stream events hold what it
 * streamed (its input's messages among them), so when the saver's
 * serializer binds values to rows (an `EncryptedSerializer`), each event's
 * `data` is sealed by it for the row it is stored in, and kept only so.
 * The event's id and name, like the thread and run records, stay clear.
 *
 * Sealing happens before the run log's transaction opens (a transaction
 * awaits nothing foreign), opening after its read ends. A row that does not
 * open (edited, moved to another run, id or name, sealed under a data key
 * since retired) is left out, as is a row in clear beside an encrypting
 * saver (planted, or written before this build): neither is ever served.
 */
import type { SentEvent } from "./records.js";
import type { RunEventRow, SealedEventRow } from "./schema.js";
import { rowSerdeOf } from "../saver/sealing.js";

/** The saver's row-bound serializer (saver/sealing.ts). */
type RowSerde = NonNullable<Awaited<ReturnType<typeof rowSerdeOf>>>;

/** How a run log stores its events and reads them back. */
export interface EventSealing {
  /** The rows to store for `events` of run `runId` (sealed when the saver encrypts). */
  rows(runId: string, events: readonly SentEvent[]): Promise<RunEventRow[]>;
  /** The events `rows` hold, in their order; a row that does not open, or of another shape, is left out. */
  events(rows: readonly RunEventRow[]): Promise<SentEvent[]>;
  /**
   * Resolves once events can be sealed and opened; rejects as the saver's
   * serializer does when it cannot bind (`KeyChangedError`: another tab
   * changed the key, and this tab's no longer opens the database).
   */
  ready(): Promise<void>;
}

/**
 * The sealing of run events in the agent database `dbName` beside `saver`:
 * sealed with its row-bound serializer, asked again at each use (a key
 * change binds it anew); in clear beside any other saver, as rows always
 * were.
 */
export function eventSealing(saver: unknown, dbName: string): EventSealing {
  // The name of the row: moved to another run, id, name or database, it no longer opens.
  const ref = (runId: string, id: number, event: string) => ["agent-event.1", dbName, runId, id, event];
  return {
    async rows(runId, events) {
      const serde = await rowSerdeOf(saver);
      if (!serde) return events.map((event) => ({ ...event, run_id: runId }));
      return Promise.all(
        events.map(async ({ id, event, data }): Promise<SealedEventRow> => ({
          id,
          event,
          sealed: await serde.dumpsTypedForRow(data, ref(runId, id, event)),
          run_id: runId,
        })),
      );
    },
    async events(rows) {
      const serde = await rowSerdeOf(saver);
      const opened = await Promise.all(rows.map((row) => (serde ? open(serde, row) : clear(row))));
      return opened.filter((event): event is SentEvent => event !== undefined);
    },
    async ready() {
      await rowSerdeOf(saver);
    },
  };

  /** The event a sealed row holds; undefined for a row in clear, of another shape, or that does not open. */
  async function open(serde: RowSerde, row: RunEventRow): Promise<SentEvent | undefined> {
    const { run_id: runId, id, event, sealed } = row as Partial<Record<keyof SealedEventRow, unknown>>;
    if (!Array.isArray(sealed) || typeof sealed[0] !== "string" || !(sealed[1] instanceof Uint8Array)) return;
    if (typeof runId !== "string" || typeof id !== "number" || typeof event !== "string") return;
    const data = await serde.loadsTypedForRow(sealed[0], sealed[1], ref(runId, id, event)).catch(() => undefined);
    return typeof data === "string" ? { id, event, data } : undefined;
  }
}

/** The event a row in clear holds, as stored (run-log.ts checks its shape); undefined for a sealed row. */
function clear(row: RunEventRow): SentEvent | undefined {
  if ("sealed" in row) return undefined;
  const { id, event, data } = row;
  return { id, event, data };
}
