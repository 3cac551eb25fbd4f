/**
 * The page of the quota test (test/suites/quota.node.test.ts): an IndexedDBSaver on a
 * real origin, driven through `window.quotaPage`. Every answer is plain data.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { IndexedDBCheckpointError, IndexedDBSaver, QuotaExceededError, isQuotaError } from "../../src/index.js";

const DB = "quota-test";

/** Unhandled rejections in this page (an aborted write must leave none). */
const unhandled: string[] = [];
window.addEventListener("unhandledrejection", (event) => {
  const reason = event.reason as { name?: string; message?: string } | undefined;
  unhandled.push(`${reason?.name}: ${reason?.message}`);
});
const saver = new IndexedDBSaver({ dbName: DB });

/** Random (incompressible: Chromium compresses large values) bytes. */
function randomBytes(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 65_536) crypto.getRandomValues(bytes.subarray(i, Math.min(size, i + 65_536)));
  return bytes;
}

function describeError(error: unknown) {
  const e = error as (Error & { cause?: unknown }) | null;
  const cause = e?.cause as { name?: string; message?: string } | undefined;
  return {
    name: e?.name,
    message: e?.message,
    causeName: cause?.name,
    causeMessage: cause?.message,
    isQuotaError: isQuotaError(error),
    isQuotaExceededError: error instanceof QuotaExceededError,
    isPackageError: error instanceof IndexedDBCheckpointError,
  };
}

const meta = (step: number) => ({ source: "loop", step, parents: {} }) as CheckpointMetadata;
const root = (thread_id: string) => ({ configurable: { thread_id, checkpoint_ns: "" } });

/** Puts one checkpoint on top of the thread's latest, with a `size`-byte value. */
async function putOn(threadId: string, size: number) {
  const latest = await saver.getTuple(root(threadId));
  const version = saver.getNextVersion(latest?.checkpoint.channel_versions.data as number | undefined);
  const checkpoint = {
    ...emptyCheckpoint(),
    id: uuid6(0),
    channel_values: { data: randomBytes(size), size },
    channel_versions: { data: version, size: version },
  };
  await saver.put(latest?.config ?? root(threadId), checkpoint, meta((latest?.metadata?.step ?? -1) + 1), {
    data: version,
    size: version,
  });
  return { id: checkpoint.id, version };
}

async function attempt<T>(work: () => Promise<T>) {
  try {
    return { ok: true as const, value: await work() };
  } catch (error) {
    return { ok: false as const, error: describeError(error) };
  }
}

/** Every row of the database, per store, that belongs to `threadId` (keys only). */
function rawRows(threadId: string): Promise<Record<string, unknown[]>> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB);
    request.onerror = () => reject(request.error);
    request.onsuccess = () => {
      const db = request.result;
      const stores = ["checkpoints", "blobs", "writes"];
      const tx = db.transaction(stores, "readonly");
      const out: Record<string, unknown[]> = {};
      for (const store of stores) {
        const keys = tx.objectStore(store).getAllKeys(IDBKeyRange.bound([threadId], [threadId, []]));
        keys.onsuccess = () => (out[store] = keys.result as unknown[]);
      }
      // Row format 2: the values a checkpoint row holds inline, by the blob keys they stand for.
      const rows = tx.objectStore("checkpoints").getAll(IDBKeyRange.bound([threadId], [threadId, []]));
      rows.onsuccess = () =>
        (out.inline = (rows.result as { inline_keys?: unknown[] }[]).flatMap((row) => row.inline_keys ?? []));
      tx.oncomplete = () => {
        db.close();
        resolve(out);
      };
      tx.onerror = () => reject(tx.error);
    };
  });
}

const api = {
  unhandled: async () => unhandled,
  async usage() {
    const estimate = await navigator.storage.estimate();
    return { usage: estimate.usage ?? 0, quota: estimate.quota ?? 0 };
  },
  /** `count` checkpoints of `size` bytes each on `threadId`. */
  async fill(threadId: string, count: number, size: number) {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await putOn(threadId, size)).id);
    return ids;
  },
  putOn: (threadId: string, size: number) => attempt(() => putOn(threadId, size)),
  /** Writes of `size` bytes to the thread's latest checkpoint. */
  putWrites: (threadId: string, size: number) =>
    attempt(async () => {
      const latest = await saver.getTuple(root(threadId));
      await saver.putWrites(latest!.config, [["data", randomBytes(size)]], `task-${size}`);
    }),
  /** A big put and a small put on another thread, issued together (one group commit). */
  async together(bigThread: string, bigSize: number, smallThread: string) {
    const [big, small] = await Promise.all([
      attempt(() => putOn(bigThread, bigSize)),
      attempt(() => putOn(smallThread, 100)),
    ]);
    return { big, small };
  },
  /** What reads show of a thread: ids newest first, value sizes, the latest id. */
  read: (threadId: string) =>
    attempt(async () => {
      const tuples = [];
      for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
        const data = tuple.checkpoint.channel_values.data as Uint8Array;
        tuples.push({
          id: tuple.checkpoint.id,
          bytes: data?.length,
          size: tuple.checkpoint.channel_values.size,
          writes: tuple.pendingWrites?.length ?? 0,
        });
      }
      return { latest: (await saver.getTuple(root(threadId)))?.checkpoint.id, tuples };
    }),
  deleteThread: (threadId: string) => attempt(() => saver.deleteThread(threadId)),
  rawRows,
  /** What Chromium itself reports for a raw put that does not fit (a database of its own). */
  rawProbe(size: number) {
    return new Promise<Record<string, unknown>>((resolve) => {
      const request = indexedDB.open("quota-probe", 1);
      request.onupgradeneeded = () => request.result.createObjectStore("s");
      request.onsuccess = () => {
        const db = request.result;
        const tx = db.transaction(["s"], "readwrite");
        const put = tx.objectStore("s").put(randomBytes(size), "k");
        const seen: Record<string, unknown> = {};
        put.onerror = () => (seen.requestError = put.error?.name ?? null);
        tx.onabort = () => {
          seen.transactionError = tx.error?.name ?? null;
          seen.transactionMessage = tx.error?.message ?? null;
          db.close();
          resolve(seen);
        };
        tx.oncomplete = () => {
          db.close();
          resolve({ committed: true });
        };
      };
    });
  },
};

export type QuotaPage = typeof api;
(window as unknown as { quotaPage: QuotaPage }).quotaPage = api;
