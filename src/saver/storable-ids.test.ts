/**
 * Ids must round-trip exactly wherever a thread goes (the sync server's
 * PostgreSQL text, exports): U+0000 and lone surrogates are refused where
 * they first enter (put, putWrites, copyThread, importThread) with a clear
 * error and nothing written, while rows a database already holds under such
 * ids still read. Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { exportThread, importThread } from "../portable/index.js";
import { IndexedDBSaver } from "./index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { putRaw, readStore } from "../../test/support/reliability/raw.js";
import type { CheckpointRow } from "../rows/shapes.js";

const track = trackSavers<IndexedDBSaver>();
const META = { source: "loop" as const, step: 0, parents: {} };
const BAD: [string, string][] = [
  ["U+0000", "x\u0000y"],
  ["a lone high surrogate", "x\ud800"],
  ["a lone low surrogate", "x\udc00"],
];

function fresh(): IndexedDBSaver {
  return track(new IndexedDBSaver({ dbName: freshDbName("ids") }));
}

const root = (threadId: string, ns = "") => ({ configurable: { thread_id: threadId, checkpoint_ns: ns } });

describe("ids that would not round-trip", () => {
  for (const [what, bad] of BAD) {
    it(`${what}: put, putWrites, copyThread and importThread refuse it, nothing written`, async () => {
      const saver = fresh();
      const c1 = await saver.put(root("t"), { ...emptyCheckpoint(), id: "1" }, META, {});
      const message = /U\+0000|lone surrogate/;
      await expect(saver.put(root(bad), { ...emptyCheckpoint(), id: "1" }, META, {})).rejects.toThrow(message);
      await expect(saver.put(root("t", bad), { ...emptyCheckpoint(), id: "1" }, META, {})).rejects.toThrow(message);
      await expect(saver.put(root("t"), { ...emptyCheckpoint(), id: bad }, META, {})).rejects.toThrow(message);
      await expect(
        saver.put(c1, { ...emptyCheckpoint(), id: "2" }, { ...META, run_id: bad } as typeof META, {}),
      ).rejects.toThrow(message);
      await expect(saver.putWrites(c1, [["x", 1]], bad)).rejects.toThrow(message);
      await expect(saver.putWrites(c1, [[bad, 1]], "task")).rejects.toThrow(message);
      await expect(saver.putWrites(c1, [["x", 1]], "task", bad)).rejects.toThrow(message);
      expect((await saver.getTuple(c1))?.pendingWrites).toEqual([]);

      await expect(saver.copyThread("t", bad)).rejects.toThrow(message);
      const file = await exportThread(saver, "t");
      await expect(importThread(saver, file, { targetThreadId: bad })).rejects.toThrow(message);
      const rows = await readStore<CheckpointRow>(saver.dbName, "checkpoints");
      expect(rows.map((r) => [r.thread_id, r.checkpoint_id])).toEqual([["t", "1"]]);
    });
  }

  for (const [what, bad] of BAD) {
    it(`${what} in a channel name or a version of channel_versions: put refuses it, nothing written`, async () => {
      // They become blob row keys and the row's clear versions, which the journal, the sync server and exports
      // carry as UTF-8 text: a lone surrogate came back as U+FFFD there, another channel or version.
      const saver = fresh();
      const c1 = await saver.put(root("t"), { ...emptyCheckpoint(), id: "1" }, META, {});
      const message = /U\+0000|lone surrogate/;
      const versions = [{ [bad]: 1 }, { x: bad }, { x: `2.${bad}` }];
      for (const channel_versions of versions) {
        // Without a value of that channel (only the checkpoint names it), and with one.
        const checkpoint = { ...emptyCheckpoint(), id: "2", channel_versions };
        await expect(saver.put(c1, checkpoint, META, {})).rejects.toThrow(message);
        const [channel] = Object.keys(channel_versions);
        const withValue = { ...checkpoint, channel_values: { [channel!]: "v" } };
        await expect(saver.put(c1, withValue, META, channel_versions)).rejects.toThrow(message);
        // In newVersions alone (the checkpoint's own versions clean): the blob row's key, refused the same.
        const clean = { ...emptyCheckpoint(), id: "2", channel_versions: { x: 1 }, channel_values: { x: "v" } };
        await expect(saver.put(c1, clean, META, channel_versions)).rejects.toThrow(message);
      }
      const rows = await readStore<CheckpointRow>(saver.dbName, "checkpoints");
      expect(rows.map((r) => r.checkpoint_id)).toEqual(["1"]);
      expect(await readStore(saver.dbName, "blobs")).toEqual([]);
    });
  }

  it("rows already stored under such ids still read", async () => {
    const saver = fresh();
    await saver.put(root("t"), { ...emptyCheckpoint(), id: "1" }, META, {});
    const [row] = await readStore<CheckpointRow>(saver.dbName, "checkpoints");
    await saver.close();
    await putRaw(saver.dbName, "checkpoints", [{ ...row, thread_id: "x\u0000y" }]);
    const reopened = track(new IndexedDBSaver({ dbName: saver.dbName }));
    expect((await reopened.getTuple({ configurable: { thread_id: "x\u0000y" } }))?.checkpoint.id).toBe("1");
  });
});
