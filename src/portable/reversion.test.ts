/**
 * Re-versioning on import (reversion.ts), as helper-52 attacked it with
 * crafted files (forks.test.ts has a turn edited three times): other savers'
 * string versions, which LangGraph reads as numbers, and versions that cannot
 * be placed or stored, refused by validation with the target untouched.
 * Node and Chromium.
 */
import { MemorySaver } from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { chat } from "../../test/support/chat-graph.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { FORK_KINDS, continueBranches, forkThread, forkedView } from "../../test/support/forked-thread.js";
import { rawThread } from "../../test/support/portable-scenario.js";
import { mapVersions, rewriteThreadFile } from "../../test/support/thread-files.js";
import { ThreadFileError, exportThread, importThread, validateThreadExport } from "./index.js";

const track = trackSavers<IndexedDBSaver>();
const idb = () => track(new IndexedDBSaver({ dbName: freshDbName("reversion") }));

describe("crafted versions", () => {
  const kind = FORK_KINDS[0]!;
  const forkedFile = async () => {
    const source = new MemorySaver();
    const heads = await forkThread(source, kind, "t");
    return { source, heads, bytes: await exportThread(source, "t", { as: "bytes" }) };
  };

  it("string versions in other savers' form, collided across a fork, still read as numbers: both branches continue", async () => {
    const { source, heads, bytes } = await forkedFile();
    const file = await rewriteThreadFile(
      bytes,
      mapVersions((v) => `${String(v).padStart(32, "0")}.5`),
    );
    const target = idb();
    await importThread(target, file);
    expect(await forkedView(target, kind, "t")).toEqual(await forkedView(source, kind, "t"));
    expect(await continueBranches(target, kind, "t", heads)).toEqual(await continueBranches(source, kind, "t", heads));
  });

  for (const [name, map] of [
    ["NaN", (v: number | string) => (v === 2 ? Number.NaN : v)],
    ["an infinity", (v: number | string) => ((v as number) >= 3 ? Infinity : v)],
    ["versions a double cannot split (2^53 and up)", (v: number | string) => 2 ** 53 + 2 * (v as number)],
  ] as const) {
    it(`${name} is refused by validation; a replace import deletes nothing`, async () => {
      const { bytes } = await forkedFile();
      const file = await rewriteThreadFile(bytes, mapVersions(map));
      await expect(validateThreadExport(file)).rejects.toThrow(ThreadFileError);
      const target = idb();
      await chat(target, "t", ["mine"], true);
      const before = await rawThread(target, "t");
      await expect(importThread(target, file, { ifExists: "replace" })).rejects.toThrow(ThreadFileError);
      expect(await rawThread(target, "t")).toEqual(before);
    });
  }
});

describe("versions made by an earlier import", () => {
  const kind = FORK_KINDS[0]!;

  it("a thread imported, forked again in MemorySaver and imported again, four times over, keeps every branch", async () => {
    // MemorySaver's next version is the current one plus 1, so new versions keep their fraction:
    // steps of 2^-20 of the room compounded until the third import found none (helper-58).
    let saver = new MemorySaver();
    let leaves = await forkThread(saver, kind, "t", 3);
    for (let round = 1; round <= 4; round++) {
      const expected = await forkedView(saver, kind, "t");
      const next = new MemorySaver();
      await importThread(next, await exportThread(saver, "t", { as: "bytes" }));
      expect(await forkedView(next, kind, "t")).toEqual(expected);
      saver = next;
      const graph = kind.graph(saver);
      const grown: string[] = [];
      for (const leaf of leaves) {
        for (const word of ["x", "y"]) {
          await graph.invoke(kind.turn(`${word}${round}`), { configurable: { thread_id: "t", checkpoint_id: leaf } });
          grown.push((await graph.getState({ configurable: { thread_id: "t" } })).config.configurable!.checkpoint_id);
        }
      }
      leaves = grown.slice(0, 8);
    }
  });

  it("versions so close that a double cannot give each edit its own are refused, not shared", async () => {
    const source = new MemorySaver();
    await forkThread(source, kind, "t", 3);
    // n -> 1 + 2^-52 + n * 2^-33: room of 2^19 steps of the last bit, the last bit odd (helper-58:
    // three new versions rounded to one, and the edits read the first one's value).
    const file = await rewriteThreadFile(
      await exportThread(source, "t", { as: "bytes" }),
      mapVersions((v) => 1 + 2 ** -52 + (v as number) * 2 ** -33),
    );
    const planned = await validateThreadExport(file).then(
      () => "planned",
      (error: unknown) => error,
    );
    if (planned === "planned") {
      const target = idb();
      await importThread(target, file);
      expect(await forkedView(target, kind, "t")).toEqual(await forkedView(source, kind, "t"));
    } else expect(planned).toBeInstanceOf(ThreadFileError);
  });
});
