/**
 * Late writes (reliability issue, part 6): `deleteThread` while a real graph
 * run with slow nodes is still in flight. The run's later `put`s and
 * `putWrites` must not bring the thread back: `getTuple`, `list` and
 * `listThreads` show nothing, and a raw scan of every object store finds only
 * the two tombstone copies (the `meta` record `tombstone\u0000<id>` and the
 * `writes` row in namespace "\u0000tombstone"). The run itself ends without
 * an exception, nothing rejects unhandled, and a new run on the same id
 * afterwards starts clean. Runs in Node (fake-indexeddb) and Chromium.
 */
import { Annotation, END, START, StateGraph, type BaseCheckpointSaver } from "@langchain/langgraph/web";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { captureUnhandledRejections, describeReasons, rowsOfThread, scanAll } from "../support/reliability/raw.js";

const savers: IndexedDBSaver[] = [];

afterEach(async () => {
  const names = new Set(savers.map((saver) => saver.dbName));
  await Promise.all(savers.splice(0).map((saver) => saver.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
});

function newSaver(): IndexedDBSaver {
  const saver = new IndexedDBSaver({ dbName: freshDbName("late-writes") });
  savers.push(saver);
  return saver;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A gate a node waits at: the test sees when it is reached and decides when it opens. */
function gate() {
  let reach!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    reached,
    open,
    async pass() {
      reach();
      await opened;
    },
  };
}

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/**
 * start -> a -> (slow, side in parallel) -> c -> d -> end. `slow` waits at the
 * gate; `side` finishes first, so its writes are stored while `slow` runs.
 */
function slowGraph(saver: BaseCheckpointSaver, g: ReturnType<typeof gate>) {
  return new StateGraph(State)
    .addNode("a", async () => ({ log: ["a"] }))
    .addNode("slow", async () => {
      await g.pass();
      await sleep(5);
      return { log: ["slow"] };
    })
    .addNode("side", async () => ({ log: ["side"] }))
    .addNode("c", async () => {
      await sleep(5);
      return { log: ["c"] };
    })
    .addNode("d", async () => ({ log: ["d"] }))
    .addEdge(START, "a")
    .addEdge("a", "slow")
    .addEdge("a", "side")
    .addEdge(["slow", "side"], "c")
    .addEdge("c", "d")
    .addEdge("d", END)
    .compile({ checkpointer: saver });
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** Waits until `check` holds (the run's puts are asynchronous). */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe("deleteThread while a run is in flight", () => {
  for (const durability of ["async", "sync", "exit"] as const) {
    it(`drops the run's later puts and writes (durability "${durability}") and a new run starts clean`, async () => {
      const saver = newSaver();
      const thread = "doomed";
      const config = { configurable: { thread_id: thread }, durability };
      const unhandled = captureUnhandledRejections();

      // A finished first run, so the thread has history whatever the durability.
      const first = gate();
      first.open();
      await slowGraph(saver, first).invoke({ log: ["first"] }, config);
      // Another thread that must stay intact.
      const keep = gate();
      keep.open();
      await slowGraph(saver, keep).invoke({ log: ["keep"] }, { configurable: { thread_id: "kept" } });
      const keptBefore = await collect(saver.list({ configurable: { thread_id: "kept" } }));
      const baseStep = (await saver.getTuple({ configurable: { thread_id: thread } }))!.metadata!.step;

      // The second run stops inside `slow`; delete the thread there.
      const g = gate();
      const run = slowGraph(saver, g).invoke({ log: ["second"] }, config);
      await g.reached;
      if (durability !== "exit") {
        await until(
          // Input (+1), `a` scheduled (+2), `a` done and `slow` running (+3).
          async () => (await saver.getTuple({ configurable: { thread_id: thread } }))!.metadata!.step >= baseStep + 3,
          "the checkpoint `slow` runs on",
        );
      }
      await saver.deleteThread(thread);
      expect(await saver.getTuple({ configurable: { thread_id: thread } })).toBeUndefined();

      // The run goes on: `slow` returns, `c` and `d` run, every put and putWrites arrives late.
      g.open();
      const finalState = await run;
      expect(finalState.log).toEqual(["first", "a", "side", "slow", "c", "d", "second", "a", "side", "slow", "c", "d"]);

      expect(await saver.getTuple({ configurable: { thread_id: thread } })).toBeUndefined();
      expect(await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } })).toBeUndefined();
      expect(await collect(saver.list({ configurable: { thread_id: thread } }))).toEqual([]);
      const everywhere = await collect(saver.list({ configurable: {} }));
      expect(everywhere.filter((tuple) => tuple.config.configurable?.thread_id === thread)).toEqual([]);
      const threads = await collect(saver.listThreads());
      expect(threads.map((t) => t.threadId)).toEqual(["kept"]);
      expect(
        await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread } }, channels: ["log"] }),
      ).toEqual({
        log: { writes: [] },
      });

      // Raw: nothing of the thread but its two tombstone copies.
      const rows = rowsOfThread(await scanAll(saver.dbName), thread);
      expect(rows.checkpoints).toEqual([]);
      expect(rows.blobs).toEqual([]);
      expect(rows.threads).toEqual([]);
      expect(rows.meta.map((row) => row.name)).toEqual([`tombstone\u0000${thread}`]);
      expect(rows.writes.map((row) => [row.checkpoint_ns, row.channel])).toEqual([
        ["\u0000tombstone", "\u0000tombstone"],
      ]);

      // The other thread is untouched.
      expect(await collect(saver.list({ configurable: { thread_id: "kept" } }))).toEqual(keptBefore);

      // A new run on the same id starts afresh, with only its own history.
      const fresh = gate();
      fresh.open();
      const graph = slowGraph(saver, fresh);
      const state = await graph.invoke({ log: ["third"] }, config);
      expect(state.log).toEqual(["third", "a", "side", "slow", "c", "d"]);
      const history = await collect(graph.getStateHistory({ configurable: { thread_id: thread } }));
      expect(history[0]!.values.log).toEqual(["third", "a", "side", "slow", "c", "d"]);
      // The chain starts over: its oldest checkpoint has no parent.
      expect(history.at(-1)!.parentConfig).toBeUndefined();
      expect(
        history.every(
          (snapshot) => !(snapshot.values.log ?? []).some((entry: string) => entry === "first" || entry === "second"),
        ),
      ).toBe(true);
      expect((await collect(saver.listThreads())).map((t) => t.threadId).sort()).toEqual(["doomed", "kept"]);

      expect(describeReasons(await unhandled.stop())).toEqual([]);
    });
  }

  it("drops writes that came before their late checkpoint's put (putWrites may precede put)", async () => {
    const saver = newSaver();
    const thread = "early-writes";
    const unhandled = captureUnhandledRejections();
    const g = gate();
    g.open();
    await slowGraph(saver, g).invoke({ log: ["first"] }, { configurable: { thread_id: thread } });
    const head = (await saver.getTuple({ configurable: { thread_id: thread } }))!;
    await saver.deleteThread(thread);
    // The run in flight made its next checkpoint; its task's writes are stored first...
    const next = {
      ...head.checkpoint,
      id: uuid6(0),
      channel_values: { log: ["late"] },
      channel_versions: { log: saver.getNextVersion(9) },
    };
    const nextConfig = { configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: next.id } };
    await saver.putWrites(nextConfig, [["log", ["early write"]]], "task-early");
    // ...then its put arrives, on top of a deleted checkpoint: a late write.
    await saver.put(head.config, next, { source: "loop", step: 99, parents: {} }, { log: next.channel_versions.log });
    expect(await saver.getTuple({ configurable: { thread_id: thread } })).toBeUndefined();
    const rows = rowsOfThread(await scanAll(saver.dbName), thread);
    expect(rows.checkpoints).toEqual([]);
    expect(rows.blobs).toEqual([]);
    expect(rows.writes.map((row) => [row.checkpoint_ns, row.task_id])).toEqual([["\u0000tombstone", ""]]);
    expect(describeReasons(await unhandled.stop())).toEqual([]);
  });

  it("drops late writes of another saver on the same database, which has not seen the delete (the tombstone is read in the write's own transaction)", async () => {
    const saver = newSaver();
    // A second saver (say another tab): it never saw the delete, so nothing tells it to read the tombstone.
    const writer = new IndexedDBSaver({ dbName: saver.dbName });
    savers.push(writer);
    const thread = "other-saver";
    const unhandled = captureUnhandledRejections();
    const g = gate();
    g.open();
    await slowGraph(writer, g).invoke({ log: ["first"] }, { configurable: { thread_id: thread } });
    const head = (await writer.getTuple({ configurable: { thread_id: thread } }))!;
    await saver.deleteThread(thread);
    const next = {
      ...head.checkpoint,
      id: uuid6(0),
      channel_values: { log: ["late"] },
      channel_versions: { log: writer.getNextVersion(9) },
    };
    const nextConfig = { configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: next.id } };
    // A write and a put in one tick, as a run makes them: they share a transaction.
    await Promise.all([
      writer.putWrites(nextConfig, [["log", ["late write"]]], "task-late"),
      writer.put(head.config, next, { source: "loop", step: 99, parents: {} }, { log: next.channel_versions.log }),
    ]);
    // Writes to the deleted head itself, on their own.
    await writer.putWrites(head.config, [["log", ["late write on head"]]], "task-head");
    expect(await writer.getTuple({ configurable: { thread_id: thread } })).toBeUndefined();
    const rows = rowsOfThread(await scanAll(saver.dbName), thread);
    expect(rows.checkpoints).toEqual([]);
    expect(rows.blobs).toEqual([]);
    expect(rows.writes.map((row) => [row.checkpoint_ns, row.task_id])).toEqual([["\u0000tombstone", ""]]);
    // One tombstone record, the deleteThread's, now naming the dropped checkpoint.
    expect(rows.meta).toEqual([expect.objectContaining({ name: `tombstone\u0000${thread}` })]);
    expect((rows.meta[0] as { value: { dropped: string[] } }).value.dropped).toEqual([next.id]);

    // A new run on the same id starts a fresh chain: accepted, and its next checkpoints too.
    await slowGraph(writer, g).invoke({ log: ["again"] }, { configurable: { thread_id: thread } });
    const state = await slowGraph(writer, g).getState({ configurable: { thread_id: thread } });
    expect(state.values.log[0]).toBe("again");
    expect(describeReasons(await unhandled.stop())).toEqual([]);
  });

  it("drops puts and writes that race with the delete itself (deleteThread and the run's put in one tick)", async () => {
    const saver = newSaver();
    const thread = "race";
    const unhandled = captureUnhandledRejections();
    const opened = gate();
    opened.open();
    await slowGraph(saver, opened).invoke({ log: ["first"] }, { configurable: { thread_id: thread } });
    // 20 runs, each deleted at a different moment of its life, down to "at once".
    for (let delay = 0; delay < 20; delay++) {
      const g = gate();
      g.open();
      const run = slowGraph(saver, g).invoke({ log: [`run ${delay}`] }, { configurable: { thread_id: thread } });
      await sleep(delay);
      await saver.deleteThread(thread);
      await run;
      // Whatever the timing, the run can only have left checkpoints on a fresh
      // chain started after the delete (its first put had no parent yet), never
      // any that hang off a deleted one.
      const left = await collect(saver.list({ configurable: { thread_id: thread } }));
      const ids = new Set(left.map((tuple) => tuple.checkpoint.id));
      for (const tuple of left) {
        const parent = tuple.parentConfig?.configurable?.checkpoint_id;
        if (parent !== undefined) expect(ids.has(parent)).toBe(true);
      }
      await saver.deleteThread(thread);
      expect(await collect(saver.list({ configurable: { thread_id: thread } }))).toEqual([]);
    }
    expect(describeReasons(await unhandled.stop())).toEqual([]);
  });
});
