/**
 * History of delta-channel chats (issue 13, goals 4 and 5):
 * `graph.getStateHistory` of a 100-turn `MessagesDeltaValue` chat against
 * MemorySaver on the same graph, 200 turns against 100 (linear, not
 * quadratic), and a cold start: a new saver and graph (no open connection,
 * nothing kept) and its first `getState` of a 200-turn delta chat. And the
 * same 100-turn history by the saver that wrote it (its `list` answered
 * from memory, saver/fresh-cache.ts) against a saver with `freshReads:
 * false`, paired (`npm run bench -- history fresh` runs that figure alone).
 */
import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { IndexedDBSaver } from "../../src/index.js";
import { chatGraph } from "../../test/support/chat-graph.js";
import { deleteDatabase, median, ms, pairedRow, row, type BenchRow, type Suite } from "../harness.js";

const SUITE = "history";

/** Writes a `turns`-turn delta chat into `threadId`. */
async function seed(saver: BaseCheckpointSaver, threadId: string, turns: number): Promise<void> {
  const graph = chatGraph(saver, true);
  const config = { configurable: { thread_id: threadId } };
  for (let i = 0; i < turns; i++)
    await graph.invoke({ messages: [new HumanMessage(`question ${i}: ${"lorem ipsum ".repeat(6)}`)] }, config);
}

/** Median ms of reading the whole history (every snapshot) of `threadId`, and the number of snapshots. */
async function timeHistory(saver: BaseCheckpointSaver, threadId: string, rounds = 5): Promise<number> {
  const graph = chatGraph(saver, true);
  const config = { configurable: { thread_id: threadId } };
  const times: number[] = [];
  for (let r = 0; r < rounds + 1; r++) {
    const start = performance.now();
    let snapshots = 0;
    for await (const snapshot of graph.getStateHistory(config)) {
      void snapshot;
      snapshots++;
    }
    if (snapshots === 0) throw new Error(`history of ${threadId} is empty`);
    // The first round warms up.
    if (r > 0) times.push(performance.now() - start);
  }
  return median(times);
}

async function histories(): Promise<BenchRow[]> {
  const dbName = `bench-history-${Date.now()}`;
  const ours = new IndexedDBSaver({ dbName });
  const memory = new MemorySaver();
  for (const saver of [ours, memory]) {
    await seed(saver, "h100", 100);
    await seed(saver, "h200", 200);
  }
  const memory100 = await timeHistory(memory, "h100");
  const ours100 = await timeHistory(ours, "h100");
  const ours200 = await timeHistory(ours, "h200");
  const memory200 = await timeHistory(memory, "h200");
  await ours.close();
  await deleteDatabase(dbName);
  return [
    row(SUITE, "getStateHistory, 100-turn delta chat", ours100, memory100, "MemorySaver", ms, { max: 1.0 }),
    row(SUITE, "getStateHistory, 200 vs 100 turns", ours200, ours100, "ours at 100", ms, { max: 2.2 }),
    row(SUITE, "  MemorySaver getStateHistory, 200 vs 100", memory200, memory100, "MemorySaver at 100", ms),
  ];
}

/**
 * getStateHistory of a 100-turn delta chat by the saver that wrote it (the
 * default: its lists answered from memory while it holds its write lease)
 * and by a saver with `freshReads: false` that wrote the same chat, in
 * alternating rounds (each goes first every other round). Before each round each saver writes once elsewhere, as
 * a chat app's saver has just written its last turn: the lease is let go
 * after a second without a write or a hit (saver/write-lease.ts), and the
 * other saver's round may take that long.
 */
async function freshHistory(): Promise<BenchRow[]> {
  const savers = [
    new IndexedDBSaver({ dbName: `bench-history-fresh-${Date.now()}` }),
    new IndexedDBSaver({ dbName: `bench-history-reads-${Date.now()}`, freshReads: false }),
  ];
  for (const saver of savers) await seed(saver, "h100", 100);
  const times: number[][] = [[], []];
  const lists: number[][] = [[], []];
  let listed = 0;
  /** ms of listing every checkpoint of the chat (what getStateHistory asks its saver for, besides delta walks). */
  const timeList = async (saver: IndexedDBSaver) => {
    const start = performance.now();
    listed = 0;
    for await (const tuple of saver.list({ configurable: { thread_id: "h100", checkpoint_ns: "" } }))
      listed += tuple ? 1 : 0;
    return performance.now() - start;
  };
  for (let round = 0; round < 8; round++) {
    // Each starts every other round: neither gains from going first.
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const saver = savers[i]!;
      await seed(saver, `scratch-${round}`, 1);
      const time = await timeHistory(saver, "h100", 1);
      const list = await timeList(saver);
      // The first round warms up.
      if (round > 0) times[i]!.push(time);
      if (round > 0) lists[i]!.push(list);
    }
  }
  for (const saver of savers) {
    await saver.close();
    await deleteDatabase(saver.dbName);
  }
  return [
    pairedRow(
      SUITE,
      `list of the 100-turn delta chat (${listed} checkpoints), default vs freshReads: false`,
      lists[0]!,
      lists[1]!,
      "freshReads: false",
      ms,
    ),
    pairedRow(
      SUITE,
      "getStateHistory, 100-turn delta chat, default vs freshReads: false",
      times[0]!,
      times[1]!,
      "freshReads: false",
      ms,
    ),
  ];
}

/** The cold start's budget (goal 5): the ratio is ours / 50 ms. */
const COLD_BUDGET_MS = 50;

async function coldStart(): Promise<BenchRow[]> {
  const dbName = `bench-cold-${Date.now()}`;
  const writer = new IndexedDBSaver({ dbName });
  await seed(writer, "cold", 200);
  await writer.close();
  const config = { configurable: { thread_id: "cold" } };
  const times: number[] = [];
  for (let r = 0; r < 7; r++) {
    // A new saver and graph each round: no connection open, no walk kept, as on a new page.
    const start = performance.now();
    const saver = new IndexedDBSaver({ dbName });
    const state = await chatGraph(saver, true).getState(config);
    const elapsed = performance.now() - start;
    if ((state.values.messages as unknown[]).length !== 400) throw new Error("cold start read the wrong state");
    times.push(elapsed);
    await saver.close();
  }
  await deleteDatabase(dbName);
  return [
    row(SUITE, "cold start: first getState, 200-turn delta chat", median(times), COLD_BUDGET_MS, "budget", ms, {
      max: 1.0,
    }),
  ];
}

/** The history suite. */
export const historySuite: Suite = {
  name: SUITE,
  async run() {
    const only = new URLSearchParams(location.search).get("only")?.split(",") ?? [];
    if (only.includes("fresh")) return freshHistory();
    return [...(await histories()), ...(await freshHistory()), ...(await coldStart())];
  },
};
