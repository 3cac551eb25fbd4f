/**
 * `strict_resume` (the SDK's `strictResume`, which `useStream`'s submit
 * passes on): a resume that does not match the interrupts waiting fails the
 * run with LangGraph's `UnknownInterruptError`, nothing written, as the SDK
 * documents for the Agent Server, and the thread stays as it was: paused on
 * its questions (it said "error" while they still waited). Once checked for
 * its type and dropped: a single answer while two questions waited answered
 * both.
 */
import { afterEach, expect, it } from "vitest";
import { Annotation, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph/web";
import { interruptWith } from "../interrupt/index.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

/** Two nodes that run side by side, each asking its own question: two interrupts wait at once. */
function twoQuestions() {
  const State = Annotation.Root({
    answers: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  });
  return new StateGraph(State)
    .addNode("a", (_s, config: LangGraphRunnableConfig) => ({
      answers: [`a: ${interruptWith<string, string>(config, "a?")}`],
    }))
    .addNode("b", (_s, config: LangGraphRunnableConfig) => ({
      answers: [`b: ${interruptWith<string, string>(config, "b?")}`],
    }))
    .addEdge(START, "a")
    .addEdge(START, "b")
    .compile();
}

/** A thread of `twoQuestions` paused on its two questions, and what a run resuming it with `strict` streams. */
async function resumeBoth(strictResume: boolean | undefined) {
  const { client } = await openServer("strict-resume", false, { graphs: { ask: twoQuestions() } });
  const t = await client.threads.create();
  await client.runs.wait(t.thread_id, "ask", { input: { answers: [] } });
  const waiting = (await client.threads.getState(t.thread_id)).tasks.flatMap((task) => task.interrupts);
  expect(waiting).toHaveLength(2);
  const events: { event: string; data: unknown }[] = [];
  const stream = client.runs.stream(t.thread_id, "ask", { command: { resume: "yes" }, strictResume });
  for await (const part of stream) events.push(part);
  return { client, threadId: t.thread_id, events, waiting };
}

it("strict_resume: one answer while two questions wait fails the run (UnknownInterruptError), nothing written", async () => {
  const { client, threadId, events, waiting } = await resumeBoth(true);
  expect(events.find((part) => part.event === "error")?.data).toEqual({
    error: "UnknownInterruptError",
    message: expect.stringContaining("multiple pending interrupts"),
  });
  const state = await client.threads.getState(threadId);
  expect(state.values).toEqual({ answers: [] });
  expect(state.tasks.flatMap((task) => task.interrupts)).toEqual(waiting);
  expect((await client.runs.list(threadId))[0]?.status).toBe("error");
  // "The thread stays as it was" (the SDK's strictResume): paused on its questions. Before: "error".
  expect((await client.threads.get(threadId)).status).toBe("interrupted");
  // And they are answered as any waiting question is.
  const answers = Object.fromEntries(waiting.map((entry, n) => [entry.id!, `answer ${n}`]));
  await client.runs.wait(threadId, "ask", { command: { resume: answers }, strictResume: true });
  expect((await client.threads.get(threadId)).status).toBe("idle");
});

it("a resumed node that fails leaves its thread in error, though its question is still shown", async () => {
  const State = Annotation.Root({ answer: Annotation<string> });
  const graph = new StateGraph(State)
    .addNode("ask", (_s, config: LangGraphRunnableConfig) => {
      const answer = interruptWith<string, string>(config, "ok?");
      if (answer === "no") throw new Error("refused");
      return { answer };
    })
    .addEdge(START, "ask")
    .compile();
  const { client } = await openServer("strict-resume", false, { graphs: { ask: graph } });
  const t = await client.threads.create();
  await client.runs.wait(t.thread_id, "ask", { input: {} });
  const resumed = client.runs.wait(t.thread_id, "ask", { command: { resume: "no" }, strictResume: true });
  await expect(resumed).rejects.toThrow("refused");
  // LangGraph keeps the task's interrupt beside its error: the node ran, and the thread says it failed.
  expect((await client.threads.getState(t.thread_id)).tasks[0]).toMatchObject({ interrupts: [{ value: "ok?" }] });
  expect((await client.threads.get(t.thread_id)).status).toBe("error");
});

it("a resumed node stopped by its run's timeout leaves its thread in error: it ran, though it wrote nothing", async () => {
  const State = Annotation.Root({ answer: Annotation<string> });
  const graph = new StateGraph(State)
    .addNode("ask", async (_s, config: LangGraphRunnableConfig) => {
      const answer = interruptWith<string, string>(config, "ok?");
      // Outlasts the run's timeout: LangGraph aborts the node, and no error of its task is written.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      return { answer };
    })
    .addEdge(START, "ask")
    .compile();
  const { client, server } = await openServer("strict-resume", false, { graphs: { ask: graph } });
  const t = await client.threads.create();
  await client.runs.wait(t.thread_id, "ask", { input: {} });
  // The SDK's types have no `timeout` in a run's config; the Agent Server takes one.
  const resumed = await server.fetch(`http://local.invalid/threads/${t.thread_id}/runs/wait`, {
    method: "POST",
    body: JSON.stringify({ assistant_id: "ask", command: { resume: "yes" }, config: { timeout: 200 } }),
  });
  expect(JSON.stringify(await resumed.json())).toContain("Abort");
  // Nothing of the resume is left: the question still waits, with no error on its task...
  expect((await client.threads.getState(t.thread_id)).tasks[0]).toMatchObject({
    error: null,
    interrupts: [{ value: "ok?" }],
  });
  // ...yet the run failed in the node, not refused before it (strict_resume's case): "interrupted" before.
  expect((await client.runs.list(t.thread_id)).map((run) => run.status)).toEqual(["error", "success"]);
  expect((await client.threads.get(t.thread_id)).status).toBe("error");
});

it("without strict_resume, the one answer answers both questions (LangGraph's default)", async () => {
  const { client, threadId, events } = await resumeBoth(undefined);
  expect(events.map((part) => part.event)).not.toContain("error");
  expect(((await client.threads.getState(threadId)).values as { answers: string[] }).answers.sort()).toEqual([
    "a: yes",
    "b: yes",
  ]);
});

it("a strict_resume that is not a boolean is refused (422) naming it", async () => {
  const { client, server } = await openServer("strict-resume", false, { graphs: { ask: twoQuestions() } });
  const t = await client.threads.create();
  const response = await server.fetch(`http://local.invalid/threads/${t.thread_id}/runs/wait`, {
    method: "POST",
    body: JSON.stringify({ assistant_id: "ask", input: { answers: [] }, strict_resume: "yes" }),
  });
  expect([response.status, ((await response.json()) as { message: string }).message]).toEqual([
    422,
    expect.stringContaining("strict_resume"),
  ]);
  expect(await client.runs.list(t.thread_id)).toEqual([]);
});
