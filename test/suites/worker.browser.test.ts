/**
 * The saver in a dedicated Web Worker (reliability issue, part 7), in
 * Chromium: a LangGraph chat graph (`@langchain/langgraph/web`) runs inside
 * the worker on IndexedDBSaver; the page reads its state with another
 * IndexedDBSaver on the same database, hears its puts through `subscribe`
 * (BroadcastChannel, `remote: true`), adds turns of its own, and the worker
 * carries on from them, each side seeing the other's turns.
 */
import { HumanMessage } from "@langchain/core/messages";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import type { CheckpointChange } from "../../src/saver/events.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { chat, chatGraph, plain } from "../support/chat-graph.js";

interface Reply {
  id: number;
  ok: boolean;
  messages?: [string, string][];
  checkpoints?: number;
  ms?: number;
  hasWindow?: boolean;
  error?: string;
}

let worker: Worker | undefined;
let started: ReturnType<typeof boot> | undefined;
const savers: IndexedDBSaver[] = [];
const names = new Set<string>();

// Each test uses a database of its own; the worker's saver on it closes on the delete's versionchange.
afterEach(async () => {
  await Promise.all(savers.splice(0).map((saver) => saver.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
  names.clear();
});

afterAll(() => {
  worker?.terminate();
  worker = undefined;
  started = undefined;
});

/**
 * The file's one worker: a worker imports LangGraph and the package afresh
 * (about 1 CPU-s in Chromium, measured), and what the tests prove is about
 * the two contexts sharing a database, not about the worker being new.
 * Its errors accumulate over the file, so a test also fails on an earlier
 * test's late worker error.
 */
function startWorker() {
  return (started ??= boot());
}

function boot() {
  worker = new Worker(new URL("../support/reliability/graph-worker.ts", import.meta.url), { type: "module" });
  let next = 0;
  const pending = new Map<number, (reply: Reply) => void>();
  worker.onmessage = (event: MessageEvent<Reply>) => pending.get(event.data.id)?.(event.data);
  const errors: string[] = [];
  worker.onerror = (event) => errors.push(event.message);
  return {
    errors,
    run(dbName: string, threadId: string, turns: string[], delta = false): Promise<Reply> {
      const id = ++next;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the worker did not answer: ${errors.join("; ")}`)), 30_000);
        pending.set(id, (reply) => {
          clearTimeout(timer);
          resolve(reply);
        });
        worker!.postMessage({ id, dbName, threadId, turns, delta });
      });
    },
  };
}

describe("IndexedDBSaver in a dedicated worker", () => {
  for (const delta of [false, true]) {
    it(`runs a graph there whose state the page reads with its own saver, and both continue the thread (${delta ? "MessagesDeltaValue" : "MessagesValue"})`, async () => {
      const dbName = freshDbName("worker");
      names.add(dbName);
      const page = new IndexedDBSaver({ dbName });
      savers.push(page);
      const heard: CheckpointChange[] = [];
      page.subscribe((change) => heard.push(change));
      const w = startWorker();

      const first = await w.run(dbName, "t", ["hello", "how are you?", "bye"], delta);
      expect(first.error).toBeUndefined();
      expect(first.hasWindow).toBe(false);
      expect(first.messages).toHaveLength(6);

      // The page reads the worker's state with its own saver.
      const config = { configurable: { thread_id: "t" } };
      const state = await chatGraph(page, delta).getState(config);
      expect(plain(state.values.messages)).toEqual(first.messages);
      let checkpoints = 0;
      for await (const _ of page.list(config)) checkpoints += 1;
      expect(checkpoints).toBe(first.checkpoints);
      const threads = [];
      for await (const info of page.listThreads()) threads.push(info.threadId);
      expect(threads).toEqual(["t"]);
      // ...and heard its puts from the other context.
      await expect
        .poll(() => heard.filter((c) => c.threadId === "t" && c.kind === "put" && c.remote).length)
        .toBeGreaterThanOrEqual(3);

      // The page adds a turn; the worker continues from it.
      const afterPage = await chat(page, "t", ["from the page"], delta);
      expect(afterPage).toHaveLength(8);
      const second = await w.run(dbName, "t", ["back in the worker"], delta);
      expect(second.error).toBeUndefined();
      expect(second.messages).toEqual([
        ...afterPage,
        ["human", "back in the worker"],
        ["ai", "echo back in the worker (#9)"],
      ]);
      const final = await chatGraph(page, delta).getState(config);
      expect(plain(final.values.messages)).toEqual(second.messages);
      // A fresh page-side graph on the same thread sees the whole history.
      const history = [];
      for await (const snapshot of chatGraph(page, delta).getStateHistory(config)) history.push(snapshot);
      expect(history.length).toBe(second.checkpoints);
      expect(w.errors).toEqual([]);
      console.info(
        `[worker] ${delta ? "delta" : "plain"}: 3 turns in the worker in ${first.ms?.toFixed(0)} ms, ${second.checkpoints} checkpoints`,
      );
    });
  }

  it("a run in the worker and a run in the page on different threads at the same time", async () => {
    const dbName = freshDbName("worker-both");
    names.add(dbName);
    const page = new IndexedDBSaver({ dbName });
    savers.push(page);
    const w = startWorker();
    const turns = Array.from({ length: 10 }, (_, i) => `turn ${i}`);
    const [inWorker, inPage] = await Promise.all([
      w.run(dbName, "worker-thread", turns),
      chat(page, "page-thread", turns),
    ]);
    expect(inWorker.error).toBeUndefined();
    expect(inWorker.messages).toEqual(inPage);
    const state = await chatGraph(page).getState({ configurable: { thread_id: "worker-thread" } });
    expect(plain(state.values.messages)).toEqual(inPage);
    const graph = chatGraph(page);
    await graph.invoke({ messages: [new HumanMessage("more")] }, { configurable: { thread_id: "worker-thread" } });
    expect((await graph.getState({ configurable: { thread_id: "worker-thread" } })).values.messages).toHaveLength(22);
  });
});
