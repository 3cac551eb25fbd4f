/**
 * Threads with an edited turn moved from savers whose integer channel
 * versions collide across forks (MemorySaver here, SqliteSaver in
 * forks-sqlite.node.test.ts) into IndexedDBSaver, which keeps one value per
 * version: every branch keeps its own values, and the graph continues on
 * both branches there.
 */
import { MemorySaver } from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { FORK_KINDS, continueBranches, forkThread, forkedView } from "../../test/support/forked-thread.js";
import { copyThreads } from "./index.js";

const track = trackSavers<IndexedDBSaver>();

describe("a MemorySaver thread with an edited turn copied to IndexedDBSaver", () => {
  // Three edits of one turn: each needs a version of its own between the same two (helper-52).
  for (const [kind, edits] of FORK_KINDS.flatMap((kind) => [1, 3].map((edits) => [kind, edits] as const))) {
    it(`keeps each branch's values and continues each, ${edits} edit(s) (${kind.name})`, async () => {
      const source = new MemorySaver();
      const heads = await forkThread(source, kind, "t", edits);
      const expected = await forkedView(source, kind, "t");
      // Both branches differ, or the test would not see one read as the other.
      expect(expected.history.find((state) => state.id === heads[0])?.values).not.toEqual(expected.state.values);

      const target = track(new IndexedDBSaver({ dbName: freshDbName("forks") }));
      await copyThreads(source, target, { threadIds: ["t"] });
      expect(await forkedView(target, kind, "t")).toEqual(expected);

      // And on to MemorySaver again.
      const back = new MemorySaver();
      await copyThreads(target, back, { threadIds: ["t"] });
      expect(await forkedView(back, kind, "t")).toEqual(expected);

      expect(await continueBranches(target, kind, "t", heads)).toEqual(
        await continueBranches(source, kind, "t", heads),
      );
    });
  }
});
