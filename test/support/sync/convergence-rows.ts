/**
 * A device's database read raw for the convergence oracle
 * (convergence-world.ts digests what this returns): one read-only
 * transaction over the saver's stores, through the IndexedDB API itself, not
 * the saver or the sync code under test. Nothing here imports a Node module:
 * a Chromium device (test/pages/convergence.ts) runs it in its page and hands
 * the rows back to Node.
 */

/** One stored row, as IndexedDB returns it. */
export type RawRow = Record<string, unknown>;

/** The rows the oracle reads; without `full`, blobs and writes carry their keys only (no `value`). */
export interface DeviceRows {
  checkpoints: RawRow[];
  blobs: RawRow[];
  writes: RawRow[];
  meta: RawRow[];
}

/**
 * Reads `dbName` from `factory` in one read-only transaction. Without
 * `full`, blobs and writes are read as keys (far cheaper per pulled page):
 * enough for the invariants, which look at what exists, not at its bytes.
 */
export async function readDeviceRows(factory: IDBFactory, dbName: string, full: boolean): Promise<DeviceRows> {
  const db = await new Promise<IDBDatabase>((done, fail) => {
    const open = factory.open(dbName);
    open.onsuccess = () => done(open.result);
    open.onerror = () => fail(open.error);
  });
  try {
    const tx = db.transaction(["checkpoints", "blobs", "writes", "meta"], "readonly");
    const read = <T>(name: string, keysOnly = false) =>
      new Promise<T[]>((done, fail) => {
        const store = tx.objectStore(name);
        const request = keysOnly ? store.getAllKeys() : store.getAll();
        request.onsuccess = () => done(request.result as T[]);
        request.onerror = () => fail(request.error);
      });
    const [checkpoints, blobRows, writeRows, meta] = await Promise.all([
      read<RawRow>("checkpoints"),
      read<RawRow | unknown[]>("blobs", !full),
      read<RawRow | unknown[]>("writes", !full),
      read<RawRow>("meta"),
    ]);
    // Keys only: the key paths are [thread, ns, channel, version] and [thread, ns, checkpoint, task, idx].
    const blobs: RawRow[] = full
      ? [...(blobRows as RawRow[])]
      : (blobRows as unknown[][]).map(([thread_id, checkpoint_ns, channel, version]) => ({
          thread_id,
          checkpoint_ns,
          channel,
          version,
        }));
    // Row format 2: values a checkpoint row holds inline count as the blob rows they stand for
    // (what sync pushes); a version also in a blob row (pulled beside a local inline copy) once.
    const have = new Set(blobs.map((b) => JSON.stringify([b.thread_id, b.checkpoint_ns, b.channel, b.version])));
    for (const row of checkpoints) {
      const versions = (row.channel_versions ?? {}) as Record<string, unknown>;
      for (const [channel, value] of Object.entries((row.inline ?? {}) as Record<string, unknown>)) {
        const blob: RawRow = {
          thread_id: row.thread_id,
          checkpoint_ns: row.checkpoint_ns,
          channel,
          version: versions[channel],
        };
        const key = JSON.stringify([blob.thread_id, blob.checkpoint_ns, channel, blob.version]);
        if (have.has(key)) continue;
        have.add(key);
        blobs.push(full ? { ...blob, value } : blob);
      }
    }
    const writes = full
      ? (writeRows as RawRow[])
      : (writeRows as unknown[][]).map(([thread_id, checkpoint_ns, checkpoint_id, task_id, idx]) => ({
          thread_id,
          checkpoint_ns,
          checkpoint_id,
          task_id,
          idx,
          channel: "",
        }));
    return { checkpoints, blobs, writes, meta };
  } finally {
    db.close();
  }
}
