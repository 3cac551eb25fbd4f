/**
 * The page of the crash test (test/suites/journal-crash.node.test.ts). On load:
 * opens the saver (restoring from the journal if it has one), checks the
 * thread's newest checkpoint and its history, reports them (`state`), then
 * resumes the run (or starts it), acknowledging each superstep once its
 * checkpoint `put` resolved (`ack`), and says `done` at the end, or `error`.
 * A superstep waits for the reports sent before it to arrive.
 * Reports go to the test's server (POST /crash-report, in order), so that
 * the test can open this page as Chromium's start page, with no DevTools
 * connection to set up after each restart. Query: `db`, `journal`
 * (opfs|off), `steps`, `delay` (ms per node), `session` (names the reports).
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import type { RunnableConfig } from "@langchain/core/runnables";
import { IndexedDBSaver } from "../../src/index.js";

const query = new URLSearchParams(location.search);
const dbName = query.get("db") ?? "crash";
const journal = (query.get("journal") ?? "opfs") as "opfs" | "off";
const steps = Number(query.get("steps") ?? 300);
const delay = Number(query.get("delay") ?? 15);
const thread = "crash-thread";

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

const session = query.get("session") ?? "";
let reports: Promise<unknown> = Promise.resolve();

/** Sends one report; reports leave one after another, so they arrive in order. */
function say(kind: string, value: unknown): void {
  const body = JSON.stringify({ session, kind, value });
  reports = reports.then(() =>
    fetch("/crash-report", { method: "POST", body, keepalive: true }).catch(() => undefined),
  );
}

addEventListener("error", (event) => say("error", String(event.error?.stack ?? event.message)));
addEventListener("unhandledrejection", (event) => say("error", String(event.reason?.stack ?? event.reason)));

/** Problems with the stored thread: an inconsistent newest checkpoint or history. */
async function check(
  saver: IndexedDBSaver,
  config: RunnableConfig,
): Promise<{ count: number; problems: string[]; checkpoints: number; pendingWrites: number }> {
  const problems: string[] = [];
  const tuple = await saver.getTuple(config);
  if (!tuple) return { count: 0, problems, checkpoints: 0, pendingWrites: 0 };
  const values = tuple.checkpoint.channel_values as { count?: number; log?: string[] };
  for (const channel of Object.keys(tuple.checkpoint.channel_versions)) {
    if (!channel.startsWith("branch:") && !channel.startsWith("__") && !(channel in tuple.checkpoint.channel_values))
      problems.push(`newest checkpoint lacks the value of channel ${channel}`);
  }
  const count = values.count ?? 0;
  const log = values.log ?? [];
  const expected = Array.from({ length: count }, (_, i) => `step-${i + 1}`);
  if (JSON.stringify(log) !== JSON.stringify(expected))
    problems.push(`log is not step-1..step-${count}: ${JSON.stringify(log.slice(-5))} (${log.length})`);
  // Pending writes come as whole sets: every task's writes to "count" and "log" together.
  const byTask = new Map<string, string[]>();
  for (const [taskId, channel] of tuple.pendingWrites ?? [])
    byTask.set(taskId, [...(byTask.get(taskId) ?? []), channel]);
  for (const [taskId, channels] of byTask) {
    if (channels.includes("count") !== channels.includes("log"))
      problems.push(`task ${taskId} has a half write set: ${channels.join(",")}`);
  }
  // The history: every parent present, counts going down by one.
  let checkpoints = 0;
  let previous: { id: string; parent?: string; count: number } | undefined;
  for await (const item of saver.list(config)) {
    checkpoints++;
    const itemCount = (item.checkpoint.channel_values as { count?: number }).count ?? 0;
    if (previous && previous.parent !== item.checkpoint.id)
      problems.push(`checkpoint ${previous.id} has parent ${previous.parent}, next listed is ${item.checkpoint.id}`);
    previous = { id: item.checkpoint.id, parent: item.parentConfig?.configurable?.checkpoint_id, count: itemCount };
  }
  if (previous?.parent !== undefined)
    problems.push(`oldest checkpoint ${previous.id} has a missing parent ${previous.parent}`);
  return { count, problems, checkpoints, pendingWrites: (tuple.pendingWrites ?? []).length };
}

async function main(): Promise<void> {
  const saver = new IndexedDBSaver({ dbName, journal });
  const report = await saver.recovery();
  const config: RunnableConfig = { configurable: { thread_id: thread }, recursionLimit: steps * 3 + 10 };
  const state = await check(saver, config);
  say("state", { report: { ...report, error: report.error ? String(report.error) : undefined }, ...state });

  const put = saver.put.bind(saver);
  saver.put = async (cfg, checkpoint, metadata, versions) => {
    const result = await put(cfg, checkpoint, metadata, versions);
    const count = (checkpoint.channel_values as { count?: number }).count;
    if (typeof count === "number") say("ack", count);
    return result;
  };
  const graph = new StateGraph(State)
    .addNode("tick", async (s: typeof State.State) => {
      // Paced by the reports: a superstep starts once the test has what the page said before it, so
      // the page runs only a few supersteps past the acknowledgements the test has counted (0-8 measured
      // at load 22: LangGraph's async durability starts a superstep before the last put resolved), whatever
      // the load (the test kills a session after a number of them). Unpaced, at load 22 it ran 20-30
      // supersteps past them, every one a longer history for the next session to check.
      await Promise.all([reports, new Promise((resolve) => setTimeout(resolve, delay))]);
      return { count: 1, log: [`step-${s.count + 1}`] };
    })
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (s: typeof State.State) => (s.count < steps ? "tick" : END))
    .compile({ checkpointer: saver });
  const started = state.count > 0 || state.checkpoints > 0;
  const final = (await graph.invoke(started ? null : { count: 0 }, config)) as typeof State.State;
  const after = await check(saver, config);
  // The stored count (from `after`) is what the test checks; the returned state must agree.
  if (final.count !== after.count) after.problems.push(`invoke returned count ${final.count}, stored ${after.count}`);
  say("done", { logLength: final.log.length, ...after });
}

main().catch((error: unknown) => say("error", String((error as Error)?.stack ?? error)));
