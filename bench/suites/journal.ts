/**
 * What the OPFS crash journal costs: ms per superstep of a one-node graph
 * (one `put` and one `putWrites` each) with the journal on against off, at
 * both durabilities, in alternating rounds of one run; and how long a wiped
 * database of that size takes to come back from the journal on open.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import { IndexedDBSaver, type IndexedDBSaverParams } from "../../src/index.js";
import { JOURNAL_DIRECTORY } from "../../src/journal/opfs-backend.js";
import type { RecoveryReport } from "../../src/journal/index.js";
import { deleteDatabase, median, ms, pairedRow, type BenchRow, type Suite } from "../harness.js";

const SUITE = "journal";
const STEPS = 100;
const ROUNDS = 3;

type JournaledSaver = IndexedDBSaver & { recovery(): Promise<RecoveryReport> };
const journaled = (params: Record<string, unknown>) =>
  new IndexedDBSaver(params as IndexedDBSaverParams) as JournaledSaver;

const State = Annotation.Root({ count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });

function tickGraph(saver: IndexedDBSaver) {
  return new StateGraph(State)
    .addNode("tick", () => ({ count: 1 }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (state: typeof State.State) => (state.count < STEPS ? "tick" : END))
    .compile({ checkpointer: saver });
}

const config: RunnableConfig = { configurable: { thread_id: "bench" }, recursionLimit: 1000 };

async function removeJournal(name: string): Promise<void> {
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(JOURNAL_DIRECTORY, { create: true });
  for (const suffix of [".a.journal", ".b.journal", ".active"])
    await dir.removeEntry(encodeURIComponent(name) + suffix).catch(() => undefined);
}

/** Ms per superstep of one run; with the journal on, also the restore of the wiped database afterwards. */
async function run(
  journal: "off" | "opfs",
  durability: "default" | "strict",
): Promise<{ perStep: number; restore?: number }> {
  const name = `bench-journal-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const saver = journaled({ dbName: name, journal, durability });
  await saver.recovery();
  const started = performance.now();
  await tickGraph(saver).invoke({ count: 0 }, config);
  const perStep = (performance.now() - started) / STEPS;
  await saver.close();
  let restore: number | undefined;
  if (journal === "opfs") {
    await deleteDatabase(name);
    const again = journaled({ dbName: name, journal });
    restore = (await again.recovery()).elapsedMs;
    await again.close();
  }
  await deleteDatabase(name);
  await removeJournal(name);
  return { perStep, restore };
}

/** The journal suite. */
export const journalSuite: Suite = {
  name: SUITE,
  async run(): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const restores: number[] = [];
    for (const durability of ["default", "strict"] as const) {
      const on: number[] = [];
      const off: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        off.push((await run("off", durability)).perStep);
        const journaledRun = await run("opfs", durability);
        on.push(journaledRun.perStep);
        if (journaledRun.restore !== undefined) restores.push(journaledRun.restore);
      }
      rows.push(pairedRow(SUITE, `superstep, OPFS journal (${durability} durability)`, on, off, "journal off", ms));
    }
    rows.push({
      suite: SUITE,
      name: `restore a wiped database of ${STEPS} supersteps from the journal`,
      ours: ms(median(restores)),
      baseline: "—",
      baselineName: "on open, once",
      ratio: "",
    });
    return rows;
  },
};
