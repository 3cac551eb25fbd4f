/**
 * `deleteForRuns` on a thread whose messages live on a delta channel
 * (`MessagesDeltaValue`): with the graph's channels, the checkpoints after
 * the deleted run keep the history before it (snapshots.ts); without
 * them the history starts after the gap (docs/saver.md). Found by helper-45.
 */
import { HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { chatGraph, plain } from "../../test/support/chat-graph.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const latest: RunnableConfig = { configurable: { thread_id: "t" } };
const run = (runId: string): RunnableConfig => ({ configurable: { thread_id: "t" }, metadata: { run_id: runId } });
const turn = (text: string, n: number) => [
  ["human", text],
  ["ai", `echo ${text} (#${n})`],
];

/** A saver with runs r0, r1, r2 of one turn each on a delta chat. */
async function threeRuns(encrypted = false) {
  const serde = encrypted
    ? await EncryptedSerializer.fromPassphrase("runs", {
        salt: "snapshots-salt",
        iterations: 1000,
        insecureTestOnlyWeakKdf: true,
      })
    : undefined;
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("snapshots"), serde }));
  const graph = chatGraph(saver, true);
  for (const [i, text] of ["m0", "m1", "m2"].entries()) {
    await graph.invoke({ messages: [new HumanMessage(text)] }, run(`r${i}`));
  }
  return { saver, graph };
}

/** Every checkpoint's messages, newest first, through getStateHistory. */
async function history(graph: ReturnType<typeof chatGraph>) {
  const out: unknown[] = [];
  for await (const snapshot of graph.getStateHistory(latest)) out.push(plain(snapshot.values.messages));
  return out;
}

describe("deleteForRuns on a delta chat", () => {
  for (const encrypted of [false, true]) {
    it(`with the graph's channels, takes the run out and keeps what came before it${encrypted ? " (encrypted)" : ""}`, async () => {
      const { saver, graph } = await threeRuns(encrypted);
      await saver.deleteForRuns(["r1"], { threadId: "t", channels: graph.channels });
      const expected = [...turn("m0", 1), ...turn("m2", 5)];
      expect(plain((await graph.getState(latest)).values.messages)).toEqual(expected);
      // Every checkpoint left reads the same through the history as through getState.
      const states = await history(graph);
      expect(states[0]).toEqual(expected);
      expect(states).toContainEqual(turn("m0", 1));
      // The thread goes on from there.
      await graph.invoke({ messages: [new HumanMessage("m3")] }, run("r3"));
      expect(plain((await graph.getState(latest)).values.messages)).toEqual([...expected, ...turn("m3", 5)]);
    });
  }

  it("without the channels, the history starts after the gap (as LangGraph's own walk does)", async () => {
    const { saver, graph } = await threeRuns();
    await saver.deleteForRuns(["r1"], { threadId: "t" });
    expect(plain((await graph.getState(latest)).values.messages)).toEqual(turn("m2", 5));
  });

  it("leaves runs before the first and after the last untouched, and an empty deletion changes nothing", async () => {
    const { saver, graph } = await threeRuns();
    const before = plain((await graph.getState(latest)).values.messages);
    await saver.deleteForRuns(["nobody"], { threadId: "t", channels: graph.channels });
    expect(plain((await graph.getState(latest)).values.messages)).toEqual(before);
    // The latest run: nothing after it to snapshot; the state is the one before it.
    await saver.deleteForRuns(["r2"], { threadId: "t", channels: graph.channels });
    expect(plain((await graph.getState(latest)).values.messages)).toEqual([...turn("m0", 1), ...turn("m1", 3)]);
    // The first run: what came after keeps its own turns.
    await saver.deleteForRuns(["r0"], { threadId: "t", channels: graph.channels });
    expect(plain((await graph.getState(latest)).values.messages)).toEqual(turn("m1", 3));
  });
});
