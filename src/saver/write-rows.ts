/**
 * Storing a task's pending write rows: shared by putWrites' fast path
 * (put-writes.ts) and its careful path (late-put.ts, loaded on demand).
 */
import type { IDBPObjectStore } from "idb";
import { storeAll } from "../idb/requests.js";
import type { WriteRow } from "../rows/shapes.js";
import type { SaverSchema, SaverStoreName } from "./schema.js";

/** The `writes` store in a read-write transaction. @internal */
export type WritesStore = IDBPObjectStore<SaverSchema, SaverStoreName[], "writes", "readwrite">;

/**
 * Issues the requests that store `rows`, decided per write, not per batch:
 * special channels (negative idx) replace, regular writes keep the first
 * value stored under (task_id, idx). Resolves to one result per row, `false`
 * for a regular write a first one kept out. Each row is stamped `now`
 * (`written_at`), in the transaction, as a put stamps its checkpoint
 * (sync/changes.ts). @internal
 */
export function storeWrites(store: WritesStore, rows: WriteRow[], now: number): Promise<boolean[]> {
  for (const write of rows) write.written_at = now;
  return storeAll(store, rows, (write) => write.idx < 0);
}
