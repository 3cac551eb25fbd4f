/**
 * Pull order: a checkpoint never lands on a device before its parent, even
 * when the parent gained pending writes after its child reached the server
 * (the parent then has the later sequence number), or when a delete that
 * reached the server after the child removed the parent there, and the
 * device's pull is split into pages between the two.
 */
import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { readDeviceRows } from "../../test/support/sync/convergence-rows.js";
import { device, newUser, serverForFile, type Device } from "../../test/support/sync/harness.js";

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

  // Found by the convergence run (seed 7 at the full depth): C pulled B's turn on a line whose
  // start A had deleted since, in a page that stopped before A's delete.
  it("a checkpoint whose parent a later delete removed lands with that delete", async () => {
    const { token } = newUser("order-delete");
    const a = device(served.url, token);
    const b = device(served.url, token);
    const [p, c] = [uuid6(-1), uuid6(-1)];
    await a.saver.put(config(), { ...emptyCheckpoint(), id: p }, { source: "loop", step: 0, parents: {} }, {});
    await a.sync.syncNow();
    // B continues the line; then A, which never saw B's turn, deletes the thread: up to p only.
    await b.sync.syncNow();
    await b.saver.put(config(p), { ...emptyCheckpoint(), id: c }, { source: "loop", step: 1, parents: {} }, {});
    await b.sync.syncNow();
    await a.saver.deleteThread("t");
    await a.sync.syncNow();

    // C pulls one change per page and looks at its database (raw) before each page: a
    // checkpoint's parent is there, or the thread's tombstone covers it.
    const orphans: string[] = [];
    const check = async (d: Device) => {
      const rows = await readDeviceRows(d.factory, "app", false);
      const tomb = rows.meta.find((row) => row.name === "tombstone\u0000t")?.value as
        { max_deleted_id: string } | undefined;
      const ids = new Set(rows.checkpoints.map((row) => row.checkpoint_id as string));
      for (const row of rows.checkpoints) {
        const up = row.parent_checkpoint_id as string | undefined;
        if (up !== undefined && !ids.has(up) && !(tomb !== undefined && up <= tomb.max_deleted_id))
          orphans.push(`${row.checkpoint_id as string} without ${up}`);
      }
    };
    const c3 = device(served.url, token, {
      client: {
        pullLimit: 1,
        fetch: async (input, init) => {
          if (input.includes("/v1/pull")) await check(c3);
          return fetch(input, init);
        },
      },
    });
    await c3.sync.syncNow();
    await check(c3);
    expect(orphans).toEqual([]);
    const held = [];
    for await (const tuple of c3.saver.list(config())) held.push(tuple.checkpoint.id);
    expect(held).toEqual([c]);
    for (const d of [a, b, c3]) {
      d.sync.close();
      await d.saver.close();
    }
  });
});
