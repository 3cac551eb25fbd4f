/**
 * What the task paths golden (`export-paths.json`) records of a database:
 * each pending write's key and task path, as the saver stores them.
 */
import { openDatabase } from "./shared.js";

/** `[checkpoint_ns, checkpoint_id, task_id, idx, task_path]` of every pending write in the database `name`, in key order. */
export async function storedTaskPaths(name: string): Promise<unknown[][]> {
  const db = await openDatabase(indexedDB, name);
  try {
    const rows = await new Promise<Record<string, unknown>[]>((resolve, reject) => {
      const request = db.transaction("writes", "readonly").objectStore("writes").getAll();
      request.onsuccess = () => resolve(request.result as Record<string, unknown>[]);
      request.onerror = () => reject(request.error);
    });
    return rows
      .filter((row) => typeof row.checkpoint_ns === "string" && !row.checkpoint_ns.startsWith("\u0000"))
      .map((row) => [row.checkpoint_ns, row.checkpoint_id, row.task_id, row.idx, row.task_path]);
  } finally {
    db.close();
  }
}
