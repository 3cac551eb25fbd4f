/**
 * What the crash journal needs to know of the saver's schema: after a
 * recovery, the current rows of the newest checkpoints (with their channel
 * values, pending writes and thread summary) of every thread and namespace
 * the journal's last records wrote to, re-appended because their own append
 * may have been cut off by the crash. The journal itself knows no schema.
 */
import type { Op, Payload } from "../journal/raw.js";
import { SAVER_STORE_NAMES } from "./schema.js";
import { isValidKey } from "../core/guards.js";
import { heldInline, inlineBlob, type BlobRow, type CheckpointRow, type Version } from "../rows/shapes.js";

/** How many newest checkpoints per namespace are journaled again. */
const PER_NAMESPACE = 4;

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/**
 * Put operations for the current rows of the newest checkpoints of every
 * thread and namespace that `records` wrote to (see the module's note).
 */
export async function resyncNewestRows(db: IDBDatabase, records: readonly Payload[]): Promise<Op[]> {
  const perNamespace = PER_NAMESPACE;
  const namespaces = new Map<string, [string, string]>();
  for (const record of records) {
    if (!("o" in record)) continue;
    for (const op of record.o) {
      if ((op[0] === "checkpoints" || op[0] === "writes") && (op[1] === 0 || op[1] === 1)) {
        const row = op[2] as { thread_id: string; checkpoint_ns: string };
        namespaces.set(JSON.stringify([row.thread_id, row.checkpoint_ns]), [row.thread_id, row.checkpoint_ns]);
      }
    }
  }
  if (namespaces.size === 0) return [];
  const KeyRange = (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange;
  const tx = db.transaction(
    SAVER_STORE_NAMES.filter((store) => db.objectStoreNames.contains(store)),
    "readonly",
  );
  const ops: Op[] = [];
  const threads = new Set<string>();
  for (const [threadId, ns] of namespaces.values()) {
    // Only what the saver writes: a row of another shape (an edit of the journal) names no namespace of ours.
    if (typeof threadId !== "string" || typeof ns !== "string") continue;
    if (ns.startsWith("\u0000")) continue; // a tombstone copy, not a namespace
    threads.add(threadId);
    const range = KeyRange.bound([threadId, ns], [threadId, ns, []]);
    const rows: CheckpointRow[] = [];
    await new Promise<void>((resolve, reject) => {
      const cursor = tx.objectStore("checkpoints").openCursor(range, "prev");
      cursor.onerror = () => reject(cursor.error);
      cursor.onsuccess = () => {
        const current = cursor.result;
        if (!current || rows.length >= perNamespace) return resolve();
        rows.push(current.value);
        current.continue();
      };
    });
    for (const row of rows) {
      ops.push(["checkpoints", 0, row]);
      const checkpoints = tx.objectStore("checkpoints");
      // A row edited in the database may hold anything as its versions: it is journaled again as it is, with the
      // values of the versions that can be keys. Recovery must not throw on it: it runs before every operation.
      const versions: unknown = row.channel_versions;
      const entries = typeof versions === "object" && versions !== null ? Object.entries(versions) : [];
      const blobs = await Promise.all(
        entries.map(async ([channel, version]: [string, Version]) => {
          if (!isValidKey([channel, version])) return undefined;
          // Row format 2: a value this row holds inline comes back with it; one an
          // ancestor holds inline is re-appended as the blob row it stands for.
          if (inlineBlob(row, channel, version)) return undefined;
          const key = [threadId, ns, channel, version];
          const blob = (await request(tx.objectStore("blobs").get(key))) as BlobRow | undefined;
          if (blob || !checkpoints.indexNames.contains("by_value")) return blob;
          const holders = (await request(checkpoints.index("by_value").getAll(key))) as CheckpointRow[];
          return heldInline(holders, threadId, ns, channel, version);
        }),
      );
      for (const blob of blobs) if (blob !== undefined) ops.push(["blobs", 0, blob]);
      const writes = await request(
        tx
          .objectStore("writes")
          .getAll(KeyRange.bound([threadId, ns, row.checkpoint_id], [threadId, ns, row.checkpoint_id, []])),
      );
      for (const write of writes) ops.push(["writes", 0, write]);
    }
  }
  for (const threadId of threads) {
    const thread = await request(tx.objectStore("threads").get(threadId));
    if (thread !== undefined) ops.push(["threads", 0, thread]);
  }
  return ops;
}
