/**
 * A SqliteSaver thread with an edited turn (its integer channel versions
 * collide across the fork) copied to IndexedDBSaver: see forks.test.ts.
 */
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { FORK_KINDS, continueBranches, forkThread, forkedView } from "../../test/support/forked-thread.js";
import { copyThreads } from "./index.js";

const track = trackSavers<IndexedDBSaver>();

describe("a SqliteSaver thread with an edited turn copied to IndexedDBSaver", () => {
  for (const kind of FORK_KINDS) {
    it(`keeps each branch's values and continues both (${kind.name})`, async () => {
      const source = SqliteSaver.fromConnString(":memory:");
      const heads = await forkThread(source, kind, "t");
      const expected = await forkedView(source, kind, "t");

      const target = track(new IndexedDBSaver({ dbName: freshDbName("forks-sqlite") }));
      await copyThreads(source, target, { threadIds: ["t"] });
      expect(await forkedView(target, kind, "t")).toEqual(expected);
      expect(await continueBranches(target, kind, "t", heads)).toEqual(
        await continueBranches(source, kind, "t", heads),
      );
    });
  }
});
