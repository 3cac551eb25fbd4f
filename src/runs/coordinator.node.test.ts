/**
 * runOnThread in one JavaScript realm: in Node, on the in-process lock
 * fallback and fake-indexeddb (the browsers' runs are in runs.browser.test.ts). Two savers on one
 * database stand for two tabs; each strategy gets two sends at once, and the
 * thread is counted afterwards: every user message where the strategy says,
 * no hidden sibling branch, the expected final state.
 */
import { HumanMessage } from "@langchain/core/messages";
import { Annotation, Command, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import { interruptWith } from "../interrupt/index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { isThreadRunning, runOnThread, watchThreadRunning, type MultitaskStrategy } from "./coordinator.js";
import { RunInterruptedError, ThreadBusyError } from "./errors.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import {
  DELAY_MS,
  historyReport,
  seed,
  send,
  sleep,
  slowChatGraph,
  threadState,
} from "../../test/support/runs/scenario.js";
import { verifyTwoSends } from "../../test/support/runs/verify.js";

const track = trackSavers<IndexedDBSaver>();

describe("two sends at once on one thread, from two savers", () => {
  for (const strategy of ["reject", "enqueue", "interrupt", "rollback"] as const satisfies MultitaskStrategy[]) {
    it(`"${strategy}": no input lost silently, no sibling branch, the expected state`, async () => {
      const dbName = freshDbName(`runs-${strategy}`);
      const [tabA, tabB] = [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
      await seed(tabA, "t", "hello");
      const before = await historyReport(tabA, "t");
      const [a, b] = await Promise.all([
        send(tabA, "t", "from A", strategy, DELAY_MS[strategy], false, true),
        send(tabB, "t", "from B", strategy, DELAY_MS[strategy], false, true),
      ]);
      await verifyTwoSends(strategy, a, b, tabB, "t", "hello", before.checkpoints);
    }, 30_000);
  }
});

describe("the same two sends without runOnThread (the bug of issue 12)", () => {
  it("fork the thread, and the checks above see it", async () => {
    const dbName = freshDbName("runs-uncoordinated");
    const [tabA, tabB] = [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
    await seed(tabA, "t", "hello");
    const config = { configurable: { thread_id: "t", delay_ms: 50 } };
    await Promise.all([
      slowChatGraph(tabA).invoke({ messages: [new HumanMessage("from A")] }, config),
      slowChatGraph(tabB).invoke({ messages: [new HumanMessage("from B")] }, config),
    ]);
    expect((await historyReport(tabB, "t")).problem).toMatch(/has parent/);
    const humans = (await threadState(tabB, "t")).messages.filter(([role]) => role === "human");
    expect(humans).toHaveLength(2); // "hello" and only one of the two sends
  });
});

describe("two sends at once with messages on MessagesDeltaValue", () => {
  for (const strategy of ["interrupt", "rollback"] as const) {
    it(`"${strategy}" keeps the delta channel whole`, async () => {
      const dbName = freshDbName(`runs-delta-${strategy}`);
      const [tabA, tabB] = [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
      await seed(tabA, "t", "hello", true);
      const before = await historyReport(tabA, "t");
      const [a, b] = await Promise.all([
        send(tabA, "t", "from A", strategy, DELAY_MS[strategy], true, true),
        send(tabB, "t", "from B", strategy, DELAY_MS[strategy], true, true),
      ]);
      await verifyTwoSends(strategy, a, b, tabB, "t", "hello", before.checkpoints, true);
      // A reopened saver rebuilds the same messages from the stored deltas.
      const reopened = track(new IndexedDBSaver({ dbName }));
      expect(await threadState(reopened, "t", true)).toEqual(await threadState(tabB, "t", true));
    }, 30_000);
  }
});

/** A saver whose puts take 80 ms more: late writes of a stopped run show. */
class SlowPutSaver extends IndexedDBSaver {
  override async put(...args: Parameters<IndexedDBSaver["put"]>) {
    await new Promise((resolve) => setTimeout(resolve, 80));
    return super.put(...args);
  }
}

describe("a stopped run's saver calls still in flight", () => {
  it("are waited for: a rollback leaves none of its checkpoints behind, the next run starts on the seed", async () => {
    const dbName = freshDbName("runs-slow");
    const [tabA, tabB] = [track(new SlowPutSaver({ dbName })), track(new SlowPutSaver({ dbName }))];
    await seed(tabA, "t", "hello");
    const before = await historyReport(tabA, "t");
    const a = send(tabA, "t", "from A", "rollback", DELAY_MS.rollback);
    await expect.poll(() => isThreadRunning("t", { dbName })).toBe(true);
    const b = await send(tabB, "t", "from B", "rollback", 0);
    await verifyTwoSends("rollback", await a, b, tabB, "t", "hello", before.checkpoints);
  });
});

describe("a signal or timeout in the config, as graph.invoke takes them", () => {
  // LangChain races invoke against config.signal: the promise rejected while the cut run's checkpoints were still
  // on their way (puts take 80 ms here), the thread was released, and the next run forked under them.
  const cuts = {
    signal: (controller: AbortController) => ({ signal: controller.signal }),
    timeout: () => ({ timeout: 40 }),
  };
  for (const [key, cut] of Object.entries(cuts)) {
    it(`config.${key} cuts the run as options.signal does: its writes settle before the next run starts`, async () => {
      const dbName = freshDbName(`runs-config-${key}`);
      const saver = track(new SlowPutSaver({ dbName }));
      await seed(saver, "t", "hello");
      const graph = slowChatGraph(saver);
      const controller = new AbortController();
      const config = { configurable: { thread_id: "t", delay_ms: 5_000 }, ...cut(controller) };
      const cutRun = runOnThread(graph, { messages: [new HumanMessage("A")] }, config);
      // Cut while its first checkpoint is being written.
      await new Promise((resolve) => setTimeout(resolve, 40));
      controller.abort();
      await expect(cutRun).rejects.toThrow();
      await runOnThread(graph, { messages: [new HumanMessage("B")] }, { configurable: { thread_id: "t" } });
      expect((await historyReport(saver, "t")).problem).toBeUndefined();
      // B answered on top of what A committed (its input, if its first checkpoint landed before the cut).
      const { messages } = await threadState(saver, "t");
      expect(messages.slice(-2)).toEqual([
        ["human", "B"],
        ["ai", `echo B (#${messages.length - 1})`],
      ]);
    });
  }
});

/**
 * Run "A" goes on thread "t" (seeded with a first turn, its step held `delayMs`); run "B", started with
 * `config` and `options` while A runs, must be refused with `refusal` before it asks anything of A: A
 * then ends as if B had never come (it is neither stopped nor rolled back).
 */
async function refusedBesideARun(
  name: string,
  delayMs: number,
  config: Parameters<typeof runOnThread>[2],
  options: Parameters<typeof runOnThread>[3],
  refusal: RegExp | string,
): Promise<void> {
  const saver = track(new IndexedDBSaver({ dbName: freshDbName(name) }));
  await seed(saver, "t", "hello");
  const graph = slowChatGraph(saver);
  const running = runOnThread(
    graph,
    { messages: [new HumanMessage("A")] },
    { configurable: { thread_id: "t", delay_ms: delayMs } },
  );
  await expect.poll(async () => (await threadState(saver, "t")).next).toEqual(["agent"]);
  await expect(runOnThread(graph, { messages: [new HumanMessage("B")] }, config, options)).rejects.toThrow(refusal);
  await expect(running).resolves.toBeDefined();
  expect((await threadState(saver, "t")).messages.slice(2)).toEqual([
    ["human", "A"],
    ["ai", "echo A (#3)"],
  ]);
}

describe("a config.timeout no timer can hold", () => {
  // Node's timers hold at most 2^31 - 1 ms: AbortSignal.timeout(2^31) fires after 1 ms, 2^32 and up throw.
  for (const timeout of [Infinity, 2 ** 31, 2 ** 53]) {
    it(`${timeout} is refused before the running run is asked to stop (rollback)`, async () => {
      // AbortSignal.timeout threw only once the thread was held: A was rolled back for a run that never ran.
      await refusedBesideARun(
        "runs-timeout-range",
        300,
        { configurable: { thread_id: "t" }, timeout },
        { multitask: "rollback" },
        /config\.timeout/,
      );
    });
  }

  it("a fraction of a millisecond (a deadline minus performance.now()) is a timeout, not a TypeError", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("runs-timeout-fraction") }));
    await seed(saver, "t", "hello");
    const config = { configurable: { thread_id: "t" }, timeout: 5_000.5 };
    await runOnThread(slowChatGraph(saver), { messages: [new HumanMessage("A")] }, config);
    expect((await threadState(saver, "t")).messages.slice(2)).toEqual([
      ["human", "A"],
      ["ai", "echo A (#3)"],
    ]);
  });
});

describe("a run whose signal is already aborted", () => {
  for (const strategy of ["interrupt", "rollback"] as const) {
    it(`"${strategy}": rejects at once and leaves the running one alone`, async () => {
      // The stop request used to go out before the wait was refused: A was stopped (and rolled back) for nothing.
      await refusedBesideARun(
        `runs-aborted-${strategy}`,
        400,
        { configurable: { thread_id: "t" } },
        { multitask: strategy, signal: AbortSignal.abort(new Error("cancelled before it started")) },
        "cancelled before it started",
      );
    });
  }
});

describe("a third send while the first is still stopping", () => {
  /** How long B's model thinks: far beyond any stop, however loaded the machine, and within the test's timeout. */
  const B_THINKS_MS = 20_000;
  // A stops slowly (its puts take 80 ms), so C's request reaches A, which answers it, before B takes the
  // thread. C must still stop B: B holds the thread when C waits for it, as A did when C asked.
  for (const strategy of ["interrupt", "rollback"] as const) {
    it(`"${strategy}": stops the second too, and only the last send is answered`, async () => {
      const dbName = freshDbName(`runs-third-${strategy}`);
      const saver = track(new SlowPutSaver({ dbName }));
      await seed(saver, "t", "hello");
      const a = send(saver, "t", "A", strategy, 10_000);
      await expect.poll(() => isThreadRunning("t", { dbName })).toBe(true);
      const b = send(saver, "t", "B", strategy, B_THINKS_MS);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const c = send(saver, "t", "C", strategy, 0);
      const outcomes = await Promise.all([a, b, c]);
      expect(outcomes.map(({ text, error }) => [text, error])).toEqual([
        ["A", "RunInterruptedError"],
        ["B", "RunInterruptedError"],
        ["C", undefined],
      ]);
      // B was stopped while its model was thinking: a B that ended after its turn took at least that long.
      // (Before, a 10 s turn and a bound of 3 s, a guess at the stop's speed that a loaded machine missed.)
      expect(outcomes[1]!.ms).toBeLessThan(B_THINKS_MS);
      const kept = strategy === "interrupt" ? ["A", "B", "C"] : ["C"];
      const state = await threadState(saver, "t");
      expect(state.messages.slice(2)).toEqual([
        ...kept.map((text) => ["human", text]),
        ["ai", `echo C (#${kept.length + 2})`],
      ]);
      expect((await historyReport(saver, "t")).problem).toBeUndefined();
    });
  }
});

describe("two tabs answering one question", () => {
  const Log = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
  /** A node that asks two questions, working `delay` ms between them. */
  const approvals = (saver: IndexedDBSaver) =>
    new StateGraph(Log)
      .addNode("ask", async (_: typeof Log.State, config: LangGraphRunnableConfig) => {
        const send = interruptWith(config, "Send the email?");
        await sleep(Number(config.configurable?.delay ?? 0), config.signal);
        const remove = interruptWith(config, "Delete the draft?");
        return { log: [`send:${String(send)} delete:${String(remove)}`] };
      })
      .addEdge(START, "ask")
      .compile({ checkpointer: saver });

  it("the queued answer to a question already answered is refused, not given to the next one", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("runs-answers") }));
    const graph = approvals(saver);
    const thread = { configurable: { thread_id: "t" } };
    const paused = (await graph.invoke({ log: [] }, thread)) as unknown as { __interrupt__: { id: string }[] };
    const first = paused.__interrupt__[0]!.id;
    const tabA = runOnThread(graph, new Command({ resume: { [first]: "yes" } }), {
      configurable: { thread_id: "t", delay: 200 },
    });
    await expect.poll(() => isThreadRunning("t", { dbName: saver.dbName })).toBe(true);
    // Tab B saw "Send the email?" pending too, and answers it by its id; it waits for tab A's run.
    const tabB = runOnThread(graph, new Command({ resume: { [first]: "no" } }), thread, { multitask: "enqueue" });
    await tabA;
    // It used to become the answer to "Delete the draft?", a question tab B never showed.
    await expect(tabB).rejects.toMatchObject({ name: "UnknownInterruptError" });
    const state = await graph.getState(thread);
    expect(state.tasks.flatMap((task) => task.interrupts.map((i) => i.value))).toEqual(["Delete the draft?"]);
    const second = state.tasks[0]!.interrupts[0]!.id!;
    const done = await runOnThread(graph, new Command({ resume: { [second]: "keep it" } }), thread);
    expect(done.log).toEqual(["send:yes delete:keep it"]);
  });
});

describe("isThreadRunning and watchThreadRunning", () => {
  it("report a run while it holds the thread, and its end", async () => {
    const dbName = freshDbName("runs-watch");
    const saver = track(new IndexedDBSaver({ dbName }));
    const seen: boolean[] = [];
    const unwatch = watchThreadRunning("t", { dbName }, (running) => seen.push(running));
    await expect.poll(() => seen).toEqual([false]);
    expect(await isThreadRunning("t", { dbName })).toBe(false);
    const run = send(saver, "t", "hi", "reject", 300);
    await expect.poll(() => isThreadRunning("t", { dbName })).toBe(true);
    expect(await isThreadRunning("other", { dbName })).toBe(false);
    expect(await isThreadRunning("t", { dbName: `${dbName}-other` })).toBe(false);
    await expect.poll(() => seen).toEqual([false, true]);
    expect(await run).toMatchObject({ ok: true });
    expect(await isThreadRunning("t", { dbName })).toBe(false);
    await expect.poll(() => seen).toEqual([false, true, false]);
    unwatch();
  });

  it("refuse a pollMs that would re-check back to back while the thread runs", () => {
    // pollMs 0 made 390 lock queries in the 0.5 s of one run.
    for (const pollMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => watchThreadRunning("t", { pollMs }, () => undefined), String(pollMs)).toThrow(
        /pollMs must be a positive number/,
      );
    }
  });
});

describe("a run cut off", () => {
  it("keeps its input with `next` tasks, frees the thread, and resumes with null input", async () => {
    const dbName = freshDbName("runs-cut");
    const saver = track(new IndexedDBSaver({ dbName }));
    const graph = slowChatGraph(saver);
    const controller = new AbortController();
    const config = { configurable: { thread_id: "t", delay_ms: 30_000 } };
    const changes: string[] = [];
    const off = saver.subscribe((change) => changes.push(change.kind));
    const run = runOnThread(graph, { messages: [new HumanMessage("cut")] }, config, { signal: controller.signal });
    // Cut it once the input is in the state (the "agent" step is in flight).
    await expect.poll(async () => (await threadState(saver, "t")).next).toEqual(["agent"]);
    controller.abort();
    await expect(run).rejects.not.toBeInstanceOf(RunInterruptedError);
    off();
    expect(await isThreadRunning("t", { dbName })).toBe(false);
    expect(await threadState(saver, "t")).toEqual({ messages: [["human", "cut"]], next: ["agent"] });
    await runOnThread(graph, null, { configurable: { thread_id: "t", delay_ms: 0 } });
    expect(await threadState(saver, "t")).toEqual({
      messages: [
        ["human", "cut"],
        ["ai", "echo cut (#1)"],
      ],
      next: [],
    });
    expect((await historyReport(saver, "t")).problem).toBeUndefined();
    expect(changes.length).toBeGreaterThan(0);
  });

  it("a reject while busy writes nothing and says what to do", async () => {
    const dbName = freshDbName("runs-busy");
    const saver = track(new IndexedDBSaver({ dbName }));
    const graph = slowChatGraph(saver);
    const first = runOnThread(
      graph,
      { messages: [new HumanMessage("one")] },
      { configurable: { thread_id: "t", delay_ms: 300 } },
    );
    await expect.poll(() => isThreadRunning("t", { dbName })).toBe(true);
    const error = await runOnThread(
      graph,
      { messages: [new HumanMessage("two")] },
      { configurable: { thread_id: "t" } },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThreadBusyError);
    expect((error as ThreadBusyError).message).toMatch(/multitask: "enqueue"/);
    await first;
    // Only the first run's checkpoints: the refused one wrote none.
    expect((await historyReport(saver, "t")).runIds).toHaveLength(1);
    expect((await threadState(saver, "t")).messages.map(([, text]) => text)).toEqual(["one", "echo one (#1)"]);
  });

  it("refuses a config without thread_id and a graph without an IndexedDBSaver", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("runs-config") }));
    await expect(runOnThread(slowChatGraph(saver), null, {})).rejects.toThrow(/thread_id/);
    await expect(
      runOnThread(slowChatGraph(saver), null, { configurable: { thread_id: "t" }, timeout: 0 }),
    ).rejects.toThrow(/timeout must be a positive number/);
    await expect(runOnThread({ invoke: async () => 1 }, null, { configurable: { thread_id: "t" } })).rejects.toThrow(
      /IndexedDBSaver/,
    );
  });
});
