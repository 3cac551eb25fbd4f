/**
 * Sustained load: 4 graphs run side by side, 500 supersteps each (durability
 * "sync"), on
 * IndexedDBSaver and on MemorySaver in the same run: throughput and p50/p99
 * superstep latency. Then the JS heap across 10 open/run/close cycles (no
 * leak: the heap after the cycles stays near the heap before).
 */
import { Annotation, END, START, StateGraph, MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph/web";
import { IndexedDBSaver } from "../../src/index.js";
import { bytes, deleteDatabase, ms, row, type BenchRow, type Suite } from "../harness.js";

const SUITE = "load";
const GRAPHS = 4;
const STEPS = 500;

/** A graph that loops on one node until it has run `STEPS` times, timing each superstep. */
function loopGraph(saver: BaseCheckpointSaver, gaps: number[]) {
  const State = Annotation.Root({
    step: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }),
    log: Annotation<string>({ reducer: (_, b) => b, default: () => "" }),
  });
  let last = 0;
  return new StateGraph(State)
    .addNode("work", (state) => {
      const now = performance.now();
      if (last) gaps.push(now - last);
      last = now;
      return { step: state.step + 1, log: `step ${state.step + 1} ${"x".repeat(200)}` };
    })
    .addEdge(START, "work")
    .addConditionalEdges("work", (state) => (state.step >= STEPS ? END : "work"))
    .compile({ checkpointer: saver });
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function sustained(makeSaver: () => BaseCheckpointSaver) {
  const gaps: number[] = [];
  const saver = makeSaver();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: GRAPHS }, (_, i) =>
      // durability "sync": each superstep waits for its checkpoint to be
      // committed, so the latency below includes the storage, not a backlog
      // flushed at the end of the run.
      loopGraph(saver, gaps).invoke(
        { step: 0 },
        { configurable: { thread_id: `load-${i}` }, recursionLimit: STEPS + 10, durability: "sync" },
      ),
    ),
  );
  const seconds = (performance.now() - start) / 1000;
  return { saver, perSecond: (GRAPHS * STEPS) / seconds, p50: percentile(gaps, 50), p99: percentile(gaps, 99) };
}

/** The JS heap after a full GC (Chromium runs with --js-flags=--expose-gc). */
async function heap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? 0;
}

/** The load suite. */
export const loadSuite: Suite = {
  name: SUITE,
  async run(): Promise<BenchRow[]> {
    const dbName = `bench-load-${Date.now()}`;
    const memory = await sustained(() => new MemorySaver());
    const ours = await sustained(() => new IndexedDBSaver({ dbName }));
    await (ours.saver as IndexedDBSaver).close();
    await deleteDatabase(dbName);

    const cycleDb = `bench-cycles-${Date.now()}`;
    const before = await heap();
    for (let cycle = 0; cycle < 10; cycle++) {
      const saver = new IndexedDBSaver({ dbName: cycleDb });
      const gaps: number[] = [];
      const graph = loopGraph(saver, gaps);
      await graph.invoke({ step: STEPS - 20 }, { configurable: { thread_id: `cycle-${cycle}` }, recursionLimit: 50 });
      await saver.close();
    }
    const after = await heap();
    await deleteDatabase(cycleDb);
    const perSecond = (n: number) => `${n.toFixed(0)}/s`;
    return [
      row(
        SUITE,
        `throughput, ${GRAPHS} graphs × ${STEPS} supersteps`,
        ours.perSecond,
        memory.perSecond,
        "MemorySaver",
        perSecond,
      ),
      row(SUITE, "superstep latency p50", ours.p50, memory.p50, "MemorySaver", ms),
      row(SUITE, "superstep latency p99", ours.p99, memory.p99, "MemorySaver", ms),
      row(SUITE, "JS heap after 10 open/run/close cycles", after, before, "heap before", bytes, { max: 1.5 }),
    ];
  },
};
