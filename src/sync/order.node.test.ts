/**
 * Pull order: a checkpoint never lands on a device before its parent, even
 * when the parent gained pending writes after its child reached the server
 * (the parent then has the later sequence number), and the device's pull
 * is split into pages between the two.
 */
import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { device, newUser, serverForFile } from "../../test/support/sync/harness.js";

const served = serverForFile();

const config = (id?: string) => ({
  configurable: { thread_id: "t", checkpoint_ns: "", ...(id ? { checkpoint_id: id } : {}) },
});

describe("pull order", () => {
  it("a parent that gained writes after its child was pushed still lands before (or with) the child", async () => {
    const { token } = newUser("order");
    const a = device(served.url, token);
    const ids = [uuid6(-1), uuid6(-1), uuid6(-1)];
    let parent: string | undefined;
    for (const id of ids) {
      const checkpoint: Checkpoint = { ...emptyCheckpoint(), id };
      await a.saver.put(config(parent), checkpoint, { source: "loop", step: 0, parents: {} }, {});
      parent = id;
    }
    await a.sync.syncNow();
    // A late write on the root and then on the middle one: each now sorts after its child on the server.
    await a.saver.putWrites(config(ids[0]), [["log", "late root"]], "late-task-0");
    await a.saver.putWrites(config(ids[1]), [["log", "late middle"]], "late-task-1");
    await a.sync.syncNow();

    // B pulls one change per page, and looks at its database before each page.
    const orphans: string[] = [];
    const b = device(served.url, token, {
      client: {
        pullLimit: 1,
        fetch: async (input, init) => {
          if (input.includes("/v1/pull"))
            for await (const tuple of b.saver.list(config())) {
              const up = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
              if (up !== undefined && (await b.saver.getTuple(config(up))) === undefined)
                orphans.push(`${tuple.checkpoint.id} without ${up}`);
            }
          return fetch(input, init);
        },
      },
    });
    await b.sync.syncNow();
    expect(orphans).toEqual([]);
    const held = [];
    for await (const tuple of b.saver.list(config())) held.push([tuple.checkpoint.id, tuple.pendingWrites?.length]);
    expect(held).toEqual([
      [ids[2], 0],
      [ids[1], 1],
      [ids[0], 1],
    ]);
    for (const d of [a, b]) {
      d.sync.close();
      await d.saver.close();
    }
  });
});
