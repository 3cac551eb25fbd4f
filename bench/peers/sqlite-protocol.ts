/** The messages between the sqlite-wasm peer's page side and its worker. */

/** A row of `writes`: thread, namespace, checkpoint, task, idx, channel, type, value. */
export type WriteRow = [string, string, string, string, number, string, string, Uint8Array];

/** A row of `checkpoints`: thread, namespace, id, parent id, type, checkpoint, metadata. */
export type CheckpointRow = [string, string, string, string | null, string, Uint8Array, Uint8Array];

/** What the page asks the worker. */
export type SqliteRequest =
  | { op: "open"; directory: string }
  | { op: "put"; row: CheckpointRow }
  | { op: "putWrites"; rows: WriteRow[]; replace: boolean }
  | { op: "get"; thread: string; ns: string; id?: string }
  | {
      op: "list";
      thread?: string;
      ns?: string;
      before?: string;
      limit?: number;
      /** Metadata filter as [JSON path, JSON text of the value] pairs (the official saver's). */
      filter: [string, string][];
    }
  /** The writes of `channel` (LangGraph's TASKS: the worker does not load LangGraph) to checkpoint `parent`. */
  | { op: "sends"; thread: string; parent: string; channel: string }
  | { op: "deleteThread"; thread: string }
  | { op: "close"; drop: boolean };

/** The worker's answer to request `id`. */
export type SqliteReply = { id: number; result?: unknown; error?: string };

/** A checkpoint row as the worker returns it, with its pending writes. */
export interface StoredRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string;
  checkpoint: Uint8Array;
  metadata: Uint8Array;
  writes: { task_id: string; channel: string; type: string; value: Uint8Array }[];
}
