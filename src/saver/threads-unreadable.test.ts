/**
 * `listThreads` with one thread it cannot read (a profile edited by hand, a
 * summary row half written by an old version, a row under another key): the
 * readable threads are listed, the bad one is listed with the error that
 * explains it, and nothing is deleted. Runs in Node (fake-indexeddb) and
 * Chromium (real IndexedDB).
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { SerializationError } from "../core/errors.js";
import { IndexedDBSaver } from "./index.js";
import type { ListedThread, ListThreadsOptions } from "./types.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { putRaw, rowsOfThread, scanAll } from "../../test/support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();

const meta = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });

async function listed(saver: IndexedDBSaver, options: ListThreadsOptions = {}): Promise<ListedThread[]> {
  const threads: ListedThread[] = [];
  for await (const thread of saver.listThreads(options)) threads.push(thread);
  return threads;
}

/** A database with threads "a", "bad", "c" (updated in that order), "bad" then edited by `edit`. */
async function withBadThread(edit: (name: string, row: Record<string, unknown>) => Promise<void>) {
  const name = freshDbName("threads-unreadable");
  const saver = track(new IndexedDBSaver({ dbName: name }));
  for (const [step, thread] of ["a", "bad", "c"].entries()) {
    const config = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    await saver.put(config, { ...emptyCheckpoint(), id: uuid6(step) }, meta(step), {});
  }
  await saver.close();
  const [row] = rowsOfThread(await scanAll(name), "bad").checkpoints as Record<string, unknown>[];
  await edit(name, row!);
  const before = await scanAll(name);
  return { saver: track(new IndexedDBSaver({ dbName: name })), name, before };
}

const garbage = ["msgpack", new Uint8Array([0xc1, 0xc1, 0xc1, 7])];

const edits: [string, (name: string, row: Record<string, unknown>) => Promise<void>][] = [
  [
    "its newest checkpoint's metadata is not msgpack",
    (name, row) => putRaw(name, "checkpoints", [{ ...row, metadata: garbage }]),
  ],
  [
    "its summary names a checkpoint that is gone, with metadata that is not msgpack",
    async (name, row) => {
      await putRaw(name, "threads", [
        {
          thread_id: "bad",
          updated_at: row.created_at,
          latest: { checkpoint_ns: "", checkpoint_id: "x", metadata: garbage },
        },
      ]);
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const request = indexedDB.open(name);
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
      const tx = db.transaction(["checkpoints"], "readwrite");
      tx.objectStore("checkpoints").delete(["bad", "", row.checkpoint_id as string]);
      // A non-root checkpoint keeps the thread's rows; the summary is all listThreads has to show.
      tx.objectStore("checkpoints").put({ ...row, checkpoint_ns: "sub" });
      await new Promise((resolve) => (tx.oncomplete = resolve));
      db.close();
    },
  ],
];

describe("listThreads with one unreadable thread", () => {
  for (const [what, edit] of edits) {
    it(`lists the others and reports the bad one, deleting nothing: ${what}`, async () => {
      const { saver, name, before } = await withBadThread(edit);
      const threads = await listed(saver);
      expect(threads.map((t) => t.threadId)).toEqual(["c", "bad", "a"]);
      const [c, bad, a] = threads;
      expect(c!.error).toBeUndefined();
      expect(a!.error).toBeUndefined();
      expect(c!.metadata).toEqual(meta(2));
      expect(a!.metadata).toEqual(meta(0));
      expect(bad!.error).toBeInstanceOf(SerializationError);
      expect(bad!.error!.message).toMatch(/"bad"/);
      expect(bad!.metadata).toBeUndefined();
      // Pages of one thread reach past it too.
      expect((await listed(saver, { limit: 1, offset: 2 })).map((t) => t.threadId)).toEqual(["a"]);
      // A filter compares metadata: the bad thread's cannot match, the others still do.
      expect((await listed(saver, { filter: { step: 0 } })).map((t) => t.threadId)).toEqual(["a"]);
      await saver.close();
      expect(await scanAll(name)).toEqual(before);
    });
  }
});
