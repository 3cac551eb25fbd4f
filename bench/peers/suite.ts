/**
 * `npm run bench -- peers`: this saver beside the savers users would pick
 * instead, in one page, on the same graphs and data, in alternating rounds
 * (the order rotates each round), medians. Each figure is printed once per
 * peer as ours / peer; the row against the fastest peer carries the goal
 * (≤ 1.0×). Storage: ours, idb-keyval and PGlite on IndexedDB, sqlite-wasm
 * on OPFS, in a browser profile on disk (run.mjs). The figures that need a
 * new page or a profile per saver (cold start, bytes on disk) are
 * profiles.mjs's.
 */
import { uuid6, type BaseCheckpointSaver, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { chatGraph } from "../../test/support/chat-graph.js";
import { median, ms, row, type BenchRow, type Suite } from "../harness.js";
import { twoKbCheckpoint } from "../suites/saver.js";
import { CHAT_THREAD, latestState, seed } from "./chat.js";
import { CONTENDERS, type Contender } from "./contenders.js";
import { IDLE_RELEASE_MS } from "../../src/saver/write-lease.js";
import { toolLoop, toolLoopInput, twoNodeChat } from "./graphs.js";

const SUITE = "peers";
/** Rounds of each figure (fewer for a contender with `rounds`): 3 varied by 2-3× between runs on a loaded machine. */
const ROUNDS = 7;
const stamp = Date.now();
const storage = (what: string, c: Contender) => `peers-${what}-${CONTENDERS.indexOf(c)}-${stamp}`;

/** Per contender, the values of `rounds` rounds, run in turn with the starting contender rotating. */
async function alternate(rounds: number, measure: (c: Contender, round: number) => Promise<number>) {
  const values = CONTENDERS.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < CONTENDERS.length; k++) {
      const i = (k + round) % CONTENDERS.length;
      const c = CONTENDERS[i]!;
      if (round < (c.rounds ?? rounds)) values[i]!.push(await measure(c, round));
    }
  }
  return values.map((v) => median(v.filter((x) => !Number.isNaN(x))));
}

/** Rows of one figure: ours against each peer; the fastest peer's row carries the goal. */
function figureRows(figure: string, values: (number | undefined)[], format = ms, note: string[] = []): BenchRow[] {
  const [oursValue, ...peers] = values;
  const measured = peers.filter((v): v is number => v !== undefined);
  const fastest = Math.min(...measured);
  console.log(
    `bench: ${figure}: ${CONTENDERS.map((c, i) => `${c.name} ${values[i] === undefined ? "not run" : format(values[i]!)}`).join(", ")}`,
  );
  return peers.map((peer, i) => {
    const name = CONTENDERS[i + 1]!.name;
    if (peer === undefined || oursValue === undefined)
      return {
        suite: SUITE,
        name: figure,
        ours: oursValue === undefined ? "not run" : format(oursValue),
        baseline: `not run${note[i] ? `: ${note[i]}` : ""}`,
        baselineName: name,
        ratio: "",
      };
    const compared = row(SUITE, figure, oursValue, peer, name, format, peer === fastest ? { max: 1.0 } : undefined);
    // A read stopped at the limit: ours took less than that fraction of the peer's time.
    return peer === Infinity ? { ...compared, ratio: `< ${(oursValue / HISTORY_LIMIT_MS).toFixed(2)}×` } : compared;
  });
}

/** Opens every contender on storage named after `what`; `done` closes and drops them all. */
async function openAll(what: string) {
  const savers: BaseCheckpointSaver[] = [];
  for (const c of CONTENDERS) savers.push(await c.open(storage(what, c)));
  const saverOf = (c: Contender) => savers[CONTENDERS.indexOf(c)]!;
  const done = async () => {
    for (const [i, c] of CONTENDERS.entries()) {
      await c.close(savers[i]!);
      await c.drop(storage(what, c));
    }
  };
  return { saverOf, done };
}

const INVOKES = 3;

/** ms per invoke of a graph: `INVOKES` invokes on a fresh thread per round. */
async function graphLoops(): Promise<BenchRow[]> {
  const { saverOf, done } = await openAll("loop");
  const chat = async (c: Contender, round: number) => {
    const graph = twoNodeChat(saverOf(c));
    const config = { configurable: { thread_id: `chat-${round}` } };
    const start = performance.now();
    for (let i = 0; i < INVOKES; i++) await graph.invoke({ notes: [] }, config);
    return (performance.now() - start) / INVOKES;
  };
  const tools = async (c: Contender, round: number) => {
    const graph = toolLoop(saverOf(c));
    const config = { configurable: { thread_id: `tools-${round}` } };
    const start = performance.now();
    for (let i = 0; i < INVOKES; i++) await graph.invoke(toolLoopInput(), config);
    return (performance.now() - start) / INVOKES;
  };
  // A warm-up round each (round -1: its own threads).
  for (const c of CONTENDERS) {
    await chat(c, -1);
    await tools(c, -1);
  }
  const rows = [
    ...figureRows("graph loop, 2-node chat, per invoke", await alternate(ROUNDS, chat)),
    ...figureRows("graph loop, 6-superstep tool loop, per invoke", await alternate(ROUNDS, tools)),
  ];
  await done();
  return rows;
}

const meta = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });
const PUTS = 5;
/** Rounds of the after-idle figure: each waits over a second per saver. */
const IDLE_ROUNDS = 5;

/** put of a 2 KB checkpoint, getTuple of the latest, list limit 10: on one thread per contender. */
async function saverCalls(): Promise<BenchRow[]> {
  const { saverOf, done } = await openAll("calls");
  const configs = new Map<Contender, RunnableConfig>();
  const put = async (c: Contender) => {
    let config = configs.get(c) ?? { configurable: { thread_id: "calls", checkpoint_ns: "" } };
    const start = performance.now();
    for (let i = 0; i < PUTS; i++) {
      const { checkpoint, versions } = twoKbCheckpoint(uuid6(i));
      config = await saverOf(c).put(config, checkpoint, meta(i), versions);
    }
    configs.set(c, config);
    return (performance.now() - start) / PUTS;
  };
  const latest = { configurable: { thread_id: "calls", checkpoint_ns: "" } };
  const getTuple = async (c: Contender) => {
    const start = performance.now();
    for (let i = 0; i < PUTS; i++) if (!(await saverOf(c).getTuple(latest))) throw new Error(`${c.name}: no latest`);
    return (performance.now() - start) / PUTS;
  };
  // One read after a pause longer than our lease's idle period (a user's next message): ours reads
  // IndexedDB then; the rounds above follow this saver's own calls within a second.
  const afterIdle = async (c: Contender) => {
    await new Promise((resolve) => setTimeout(resolve, IDLE_RELEASE_MS + 200));
    const start = performance.now();
    if (!(await saverOf(c).getTuple(latest))) throw new Error(`${c.name}: no latest`);
    return performance.now() - start;
  };
  const list = async (c: Contender) => {
    const start = performance.now();
    for (let i = 0; i < PUTS; i++) {
      let n = 0;
      for await (const tuple of saverOf(c).list(latest, { limit: 10 })) n += tuple ? 1 : 0;
      if (n !== 10) throw new Error(`${c.name}: list gave ${n} tuples`);
    }
    return (performance.now() - start) / PUTS;
  };
  for (const c of CONTENDERS) {
    // Two warm-up rounds of puts: list then has its 10 from the start.
    await put(c);
    await put(c);
    await getTuple(c);
    await list(c);
  }
  const rows = [
    ...figureRows("put of a 2 KB checkpoint", await alternate(ROUNDS, put)),
    ...figureRows("getTuple latest", await alternate(ROUNDS, getTuple)),
    ...figureRows("getTuple latest after an idle second", await alternate(IDLE_ROUNDS, afterIdle)),
    ...figureRows("list limit 10", await alternate(ROUNDS, list)),
  ];
  await done();
  return rows;
}

/**
 * A history read stops here and prints as "over" this: without a delta walk
 * its time grows with the square of the turns (minutes at 300 turns).
 */
const HISTORY_LIMIT_MS = 20_000;

/** ms of reading the whole history of the long chat, or Infinity past HISTORY_LIMIT_MS. */
async function history(saver: BaseCheckpointSaver): Promise<number> {
  const graph = chatGraph(saver, true);
  const start = performance.now();
  let snapshots = 0;
  for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: CHAT_THREAD } })) {
    snapshots += snapshot ? 1 : 0;
    if (performance.now() - start > HISTORY_LIMIT_MS) return Infinity;
  }
  if (snapshots === 0) throw new Error("the long chat's history is empty");
  return performance.now() - start;
}

/** A history time, or how long it ran before it was stopped. */
const historyMs = (value: number) => (value === Infinity ? `over ${HISTORY_LIMIT_MS / 1000} s` : ms(value));

/** A peer whose first history read took longer than this is read once, not in rounds. */
const HISTORY_ONCE_MS = 3_000;
const HISTORY_ROUNDS = 3;

/**
 * The long-chat figures on one delta chat per contender, grown in steps:
 * its getStateHistory at 100 turns and at 300, and at 200 turns the in-page
 * cold start (a new saver, that is a new worker, idb-keyval load or
 * IndexedDBSaver, and graph, to its first getState, in this page with its
 * code loaded; profiles.mjs times a new page). Contenders without
 * `longChats` are left out with their reason.
 */
async function longChat(): Promise<BenchRow[]> {
  const taking = CONTENDERS.filter((c) => c.longChats === true);
  const notes = CONTENDERS.slice(1).map((c) => (c.longChats === true ? "" : c.longChats));
  const savers = new Map<Contender, BaseCheckpointSaver>();
  const grow = async (from: number, turns: number) => {
    for (const c of taking) {
      const start = performance.now();
      await seed(savers.get(c)!, CHAT_THREAD, from, turns);
      console.log(`bench: ${c.name}: turns ${from}-${from + turns} in ${ms(performance.now() - start)}`);
    }
  };
  const only = async (measure: (c: Contender, round: number) => Promise<number>, rounds: number) => {
    const values = await alternate(rounds, (c, round) =>
      taking.includes(c) ? measure(c, round) : Promise.resolve(NaN),
    );
    return values.map((v) => (Number.isNaN(v) ? undefined : v));
  };
  const histories = () => {
    const first = new Map<Contender, number>();
    return only(async (c) => {
      if ((first.get(c) ?? 0) > HISTORY_ONCE_MS) return NaN;
      const value = await history(savers.get(c)!);
      if (!first.has(c)) first.set(c, value);
      return value;
    }, HISTORY_ROUNDS);
  };
  for (const c of taking) savers.set(c, await c.open(storage("chat", c)));
  await grow(0, 100);
  const h100 = await histories();
  await grow(100, 100);
  for (const c of taking) await c.close(savers.get(c)!);
  const cold = await only(async (c) => {
    const start = performance.now();
    const saver = await c.open(storage("chat", c));
    await latestState(saver, 200, c.name);
    const elapsed = performance.now() - start;
    await c.close(saver);
    return elapsed;
  }, ROUNDS);
  for (const c of taking) savers.set(c, await c.open(storage("chat", c)));
  await grow(200, 100);
  const h300 = await histories();
  for (const c of taking) {
    await c.close(savers.get(c)!);
    await c.drop(storage("chat", c));
  }
  return [
    ...figureRows("getStateHistory, 100-turn delta chat", h100, historyMs, notes),
    ...figureRows("getStateHistory, 300-turn delta chat", h300, historyMs, notes),
    ...figureRows("cold start in the loaded page: new saver to first getState, 200-turn chat", cold, ms, notes),
  ];
}

/** The peers suite. */
export const peersSuite: Suite = {
  name: SUITE,
  async run() {
    const figures = new URLSearchParams(location.search).get("figures")?.split(",");
    const rows: BenchRow[] = [];
    if (!figures || figures.includes("loops")) rows.push(...(await graphLoops()));
    if (!figures || figures.includes("calls")) rows.push(...(await saverCalls()));
    if (!figures || figures.includes("chat")) rows.push(...(await longChat()));
    return rows;
  },
};
