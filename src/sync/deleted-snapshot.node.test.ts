/**
 * A prune's delta snapshot (docs/sync.md, "Snapshots") for a checkpoint
 * that another device's delete already covers, while a third device goes on
 * above that delete: convergence seed 6014 at 60 operations, without the
 * random driver. The delete reaches the server after the snapshot and
 * before the third device's turn, takes the thread's last checkpoints there
 * and drops the thread's values with them, the snapshot among them; the
 * turn then arrives naming the snapshot's version, which its device never
 * held. Every store ends alike, without the value: it was the history the
 * user deleted. The convergence oracle (test/support/sync) counted it as
 * lost by sync until it learned that (`deletedHistory`).
 */
import { HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { chat, chatGraph, plain } from "../../test/support/chat-graph.js";
import { readDeviceRows } from "../../test/support/sync/convergence-rows.js";
import {
  deletedHistory,
  deviceInventory,
  noteHolders,
  pageInvariants,
  serverInventory,
  type Inventory,
  type Removals,
} from "../../test/support/sync/convergence-world.js";
import {
  checkpointIds,
  device,
  inspector,
  newUser,
  serverForFile,
  type Device,
} from "../../test/support/sync/harness.js";

const served = serverForFile();

describe("a delete that covers a prune's snapshot, and a turn another device added above that delete", () => {
  it("every store ends alike without the snapshot, and the oracle counts it as deleted, not lost", async () => {
    const { user, token } = newUser();
    const [a, b, c] = [device(served.url, token), device(served.url, token), device(served.url, token)];
    const pool = await inspector();
    // What the oracle sees, as test/support/sync/convergence.ts sees it: every value a store holds, and what it held it for.
    const known = new Set<string>();
    const heldFor = new Map<string, Set<string>>();
    const see = <T extends Inventory>(inv: T): T => {
      for (const value of inv.blobs.keys()) known.add(value);
      noteHolders(inv, heldFor);
      return inv;
    };
    const look = async () => {
      for (const d of [a, b, c]) see(deviceInventory(await readDeviceRows(d.factory, "app", false), false));
      return see(await serverInventory(pool, user));
    };
    const messagesOf = async (d: Device) =>
      plain((await chatGraph(d.saver, true).getState({ configurable: { thread_id: "t" } })).values.messages);

    await chat(b.saver, "t", ["one", "two"], true);
    for (const d of [b, a, c]) await d.sync.syncNow();
    // C deletes the thread before its next round: its tombstone covers every checkpoint there is now.
    await c.saver.deleteThread("t");
    // B answers on the whole history, above that tombstone; its first checkpoint keeps the head's
    // version of the delta channel, the version A's prune then stores the snapshot at.
    await chatGraph(b.saver, true).invoke(
      { messages: [new HumanMessage("three")] },
      { configurable: { thread_id: "t" } },
    );
    expect(await messagesOf(b)).toHaveLength(6);
    await a.saver.prune(["t"], { channels: chatGraph(a.saver, true).channels });
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 1 });
    const snapshots = [...(await look()).blobs.keys()].filter((value) => value.startsWith("t\0\0messages\0"));
    expect(snapshots).toHaveLength(1);
    // The delete reaches the server before B's turn; A drops the snapshot too when it pulls the delete.
    expect(await c.sync.syncNow()).toMatchObject({ pushedDeletes: 1 });
    await look();
    await a.sync.syncNow();
    await look();
    for (let i = 0; i < 3; i++) for (const d of [b, a, c]) await d.sync.syncNow();

    const ids = await checkpointIds(b.saver, "t");
    expect(ids).toHaveLength(3);
    expect(await checkpointIds(a.saver, "t")).toEqual(ids);
    expect(await checkpointIds(c.saver, "t")).toEqual(ids);
    // The history up to the tombstone went with the delete, on B too: the turn above it is what is left.
    const left = [
      ["human", "three"],
      ["ai", "echo three (#5)"],
    ];
    for (const d of [a, b, c]) expect(await messagesOf(d)).toEqual(left);

    const server = await look();
    const [first] = [...server.checkpoints.keys()].sort();
    const [, version] = snapshots[0]!.split("\0messages\0");
    expect(server.blobs.has(snapshots[0]!)).toBe(false);
    // What seed 6014 failed on: the first checkpoint of B's turn names the snapshot's version, which no
    // store holds now. None ever held it for a checkpoint above the tombstone: deleted history.
    const removals: Removals = { byThread: new Map(), copiedTombstones: new Map() };
    expect(pageInvariants(server, removals, known)).toEqual([
      `${first!.replaceAll("\0", "|")} lacks the value of messages@${version}`,
    ]);
    const forgotten = deletedHistory(known, heldFor, server.tombstones);
    expect(forgotten).toContain(snapshots[0]);
    // The values of B's turn, held for checkpoints above the tombstone, stay required.
    expect(server.blobs.size).toBeGreaterThan(0);
    for (const value of server.blobs.keys()) expect(forgotten).not.toContain(value);
    for (const value of forgotten) known.delete(value);
    expect(pageInvariants(server, removals, known)).toEqual([]);
    await pool.end();
  });
});
