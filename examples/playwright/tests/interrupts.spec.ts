/**
 * What `toBeInterruptedAt` calls paused, on threads recorded in Node (as an app
 * that runs its graph without `runOnThread` would) and seeded into the page.
 */
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { END, MessagesDeltaValue, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { exportThread } from "langgraph-checkpoint-indexeddb";
import { langgraphTest as test } from "langgraph-checkpoint-indexeddb/playwright";

const { expect } = test;
test.use({ langgraph: { dbName: "example-app" } });

/** Runs a one-node graph on thread "t1" of a MemorySaver and exports the thread. */
async function record(node: () => Promise<object>, interruptBefore: "agent"[] = []): Promise<Uint8Array> {
  const saver = new MemorySaver();
  const graph = new StateGraph(new StateSchema({ messages: MessagesDeltaValue }))
    .addNode("agent", node)
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: saver, interruptBefore });
  await graph
    .invoke({ messages: [{ role: "user", content: "hi" }] }, { configurable: { thread_id: "t1" } })
    .catch((error: unknown) => expect(String(error)).toContain("model API 500"));
  return exportThread(saver, "t1", { as: "bytes" });
}

/** The message of the error `assertion` fails with. */
async function failure(assertion: Promise<unknown>): Promise<string> {
  const error = await assertion.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the assertion should have failed").toBeInstanceOf(Error);
  return (error as Error).message;
}

test("a run whose node threw is not interrupted at that node: it failed", async ({ page, langgraph }) => {
  const file = await record(() => Promise.reject(new Error("model API 500")));
  await page.goto("/?thread=none");
  await langgraph.seed(file);
  expect((await langgraph.read("t1"))?.next).toEqual(["agent"]);
  await expect(page).not.toBeInterruptedAt("t1", "agent");
  const message = await failure(expect(page).toBeInterruptedAt("t1", "agent", { timeout: 300 }));
  expect(message).toContain("not interrupted: the run failed: Error: model API 500");
});

test("nodes due without an interrupt, outside runOnThread, are not taken for a breakpoint", async ({
  page,
  langgraph,
}) => {
  // The stored thread is the same as a run still inside "agent": only a run lock would tell.
  const file = await record(() => Promise.resolve({}), ["agent"]);
  await page.goto("/?thread=none");
  await langgraph.seed(file);
  expect((await langgraph.read("t1"))?.next).toEqual(["agent"]);
  const message = await failure(expect(page).toBeInterruptedAt("t1", "agent", { timeout: 300 }));
  expect(message).toContain("the checkpoint was not written under runOnThread");
});
