/**
 * A prune's delta snapshots under faults (docs/sync.md, "Snapshots"): the
 * snapshot stands in for the history its removals delete, so no device may
 * hold the removals without it, whatever request is refused or cut. Found
 * by helper-44 against 57100a5, where the removals went in the first push
 * and the snapshot after them: each case below read the thread empty, or
 * lost it for good, on the other device.
 */
import { HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { chat, chatGraph, plain } from "../../test/support/chat-graph.js";
import { checkpointIds, device, newUser, serverForFile } from "../../test/support/sync/harness.js";
import type { IndexedDBSaver } from "../saver/index.js";

// Each turn's checkpoint fits in a request; a snapshot of three long turns does not.
const served = serverForFile({ maxBodyBytes: 40_000 });

const config: RunnableConfig = { configurable: { thread_id: "t" } };

async function messages(saver: IndexedDBSaver) {
  const graph = chatGraph(saver, true);
  return plain((await graph.getState(config)).values.messages);
}

async function pruneWithSnapshot(saver: IndexedDBSaver): Promise<void> {
  await saver.prune(["t"], { channels: chatGraph(saver, true).channels });
}

/** A fetch that fails every request to `path` from the `from`-th on, while `on.cut` is set. */
function cutting(path: string, from: number) {
  const on = { cut: false, count: 0 };
  const fetchLike = async (input: string, init: RequestInit): Promise<Response> => {
    if (on.cut && input.includes(path) && ++on.count >= from) throw new TypeError("network down");
    return fetch(input, init);
  };
  return { on, fetch: fetchLike };
}

describe("a snapshot and the removals it stands in for", () => {
  it("deleteForRuns of a middle run with the graph's channels: the other device reads what this one reads", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    const graph = chatGraph(a.saver, true);
    for (const [i, text] of ["m0", "m1", "m2"].entries()) {
      await graph.invoke({ messages: [new HumanMessage(text)] }, { ...config, metadata: { run_id: `r${i}` } });
    }
    await a.sync.syncNow();
    await b.sync.syncNow();
    await a.saver.deleteForRuns(["r1"], { threadId: "t", channels: graph.channels });
    const expected = plain((await graph.getState(config)).values.messages);
    expect(expected).toHaveLength(4);
    await a.sync.syncNow();
    await b.sync.syncNow();
    expect(await checkpointIds(b.saver, "t")).toEqual(await checkpointIds(a.saver, "t"));
    expect(await messages(b.saver)).toEqual(expected);
  });

  it("a write another device adds to a revalued checkpoint comes back without sending that checkpoint again", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "t", ["one", "two"], true);
    await a.sync.syncNow();
    await b.sync.syncNow();
    await pruneWithSnapshot(a.saver);
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 1 });
    await b.sync.syncNow();
    const [kept] = await checkpointIds(b.saver, "t");
    const keptId = kept!.split("|")[1]!;
    await b.saver.putWrites(
      { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: keptId } },
      [["x", "late"]],
      "task",
    );
    expect(await b.sync.syncNow()).toMatchObject({ pushed: 1 });
    expect(await a.sync.syncNow()).toMatchObject({ pulled: 1 });
    // The pull recorded the checkpoint as the round sees it (its mark included): nothing goes back.
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 0, pulled: 0 });
  });

  it("a snapshot the server refuses keeps the removals back: the other device keeps the history", async () => {
    const { token } = newUser();
    const a = device(served.url, token, { client: { batchBytes: 12_000 } });
    const b = device(served.url, token);
    const long = (n: number) => `${n} ${"x".repeat(8_000)}`;
    const before = await chat(a.saver, "t", [long(1), long(2), long(3)], true);
    await a.sync.syncNow();
    await b.sync.syncNow();
    // Something else to push, in a batch of its own before the thread's.
    await chat(a.saver, "a-other", ["hi"], true);
    await pruneWithSnapshot(a.saver);
    const round = await a.sync.syncNow();
    expect(round.skipped.map((s) => s.threadId)).toEqual(["t"]);
    expect(round.pushedDeletes).toBe(0);
    await b.sync.syncNow();
    expect(await checkpointIds(b.saver, "t")).toHaveLength(9);
    expect(await messages(b.saver)).toEqual(before);
  });

  it("a round cut after the snapshot went leaves the other device whole, and it goes on from there", async () => {
    const { token } = newUser();
    const cut = cutting("/push", 2);
    const a = device(served.url, token, { client: { batchSize: 2, fetch: cut.fetch } });
    const b = device(served.url, token);
    const before = await chat(a.saver, "t", ["one", "two", "three"], true);
    await a.sync.syncNow();
    await b.sync.syncNow();
    await chat(a.saver, "a-other", ["x", "y"], true);
    await pruneWithSnapshot(a.saver);
    cut.on.cut = true;
    await expect(a.sync.syncNow()).rejects.toThrow();
    cut.on.cut = false;
    await b.sync.syncNow();
    expect(await messages(b.saver)).toEqual(before);
    // B answers on the whole history and prunes in turn; both end with all of it.
    const after = await chat(b.saver, "t", ["four"], true);
    expect(after).toEqual([...before, ["human", "four"], ["ai", "echo four (#7)"]]);
    await pruneWithSnapshot(b.saver);
    for (let i = 0; i < 2; i++) for (const d of [b, a]) await d.sync.syncNow();
    expect(await checkpointIds(a.saver, "t")).toEqual(await checkpointIds(b.saver, "t"));
    expect(await messages(a.saver)).toEqual(after);
    expect(await messages(b.saver)).toEqual(after);
  });

  it("a pull cut among the removals comes after the snapshot: a prune there keeps the whole history", async () => {
    const { token } = newUser();
    const cut = cutting("/pull", 2);
    const a = device(served.url, token);
    const b = device(served.url, token, { client: { pullLimit: 4, fetch: cut.fetch } });
    const before = await chat(a.saver, "t", ["one", "two", "three"], true);
    await a.sync.syncNow();
    await b.sync.syncNow();
    await pruneWithSnapshot(a.saver);
    await a.sync.syncNow();
    cut.on.cut = true;
    await expect(b.sync.syncNow()).rejects.toThrow();
    cut.on.cut = false;
    expect(await messages(b.saver)).toEqual(before);
    await pruneWithSnapshot(b.saver);
    for (let i = 0; i < 3; i++) for (const d of [b, a]) await d.sync.syncNow();
    expect(await checkpointIds(b.saver, "t")).toEqual(await checkpointIds(a.saver, "t"));
    expect(await messages(a.saver)).toEqual(before);
    expect(await messages(b.saver)).toEqual(before);
  });
});
