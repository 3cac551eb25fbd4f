/**
 * `useStream`'s `submit(values, { multitaskStrategy: "rollback" })` while a
 * run streams, through the SDK calls it makes (the SDK's React useStream): it
 * aborts the previous stream first (`abortPrevious`), then streams the new
 * run with `multitask_strategy: "rollback"`. Without resumable streams its
 * runs ask `on_disconnect: "cancel"`, so the abort cancels the previous run
 * (action interrupt) before the rollback is asked; with them
 * (`on_disconnect: "continue"`) the previous run goes on until the rollback
 * stops it. As at the Agent Server, the first cancel decides.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@langchain/langgraph-sdk";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { human, texts, type Chat } from "../../test/support/agent-server/timing.js";

afterEach(closeServers);

/**
 * A first turn streamed and left at its first `values` event (its input is in the state), then a
 * second streamed with rollback, as useStream submits them. The run ids, first and second.
 */
async function rollbackWhileStreaming(client: Client<Chat>, threadId: string, onDisconnect: "cancel" | "continue") {
  const controller = new AbortController();
  const ids: string[] = [];
  const first = client.runs.stream(threadId, "agent", {
    input: human("first"),
    config: { configurable: { delay_ms: 1_500 } },
    multitaskStrategy: "rollback",
    onDisconnect,
    signal: controller.signal,
    onRunCreated: ({ run_id }) => void ids.push(run_id),
  });
  try {
    for await (const part of first) if (part.event === "values") controller.abort();
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  }
  const second = client.runs.stream(threadId, "agent", {
    input: human("second"),
    multitaskStrategy: "rollback",
    onDisconnect,
    onRunCreated: ({ run_id }) => void ids.push(run_id),
  });
  for await (const _ of second);
  return ids;
}

describe("useStream's rollback", () => {
  // Before: the previous run, stopped by the abort, was also rolled back by the new run when its ask came
  // while the run still held the thread: its checkpoints were gone while its record said `interrupted`
  // (kept) and its input was lost; or kept, when the run had let the thread go first. Now, as at the Agent
  // Server, the abort's cancel comes first and decides: the run is interrupted, its input kept.
  it("without resumable streams: the abort stops the previous run first; it is interrupted, its input kept", async () => {
    const { client } = await openServer<Chat>("use-stream-rollback");
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("zero") });
    const [first, second] = await rollbackWhileStreaming(client, t.thread_id, "cancel");
    expect((await client.runs.get(t.thread_id, first!)).status).toBe("interrupted");
    expect((await client.runs.get(t.thread_id, second!)).status).toBe("success");
    const { values } = await client.threads.getState(t.thread_id);
    expect(texts(values)).toEqual(["human: zero", "ai: echo zero", "human: first", "human: second", "ai: echo second"]);
    // The run's record and its checkpoints agree: what it wrote is there.
    const history = await client.threads.getHistory(t.thread_id, { limit: 20 });
    expect(history.some((state) => state.metadata?.run_id === first)).toBe(true);
  });

  it("with resumable streams (on_disconnect continue): the previous run goes on until the rollback deletes it", async () => {
    const { client } = await openServer<Chat>("use-stream-rollback-resumable");
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("zero") });
    const [first, second] = await rollbackWhileStreaming(client, t.thread_id, "continue");
    await expect(client.runs.get(t.thread_id, first!)).rejects.toThrow(/404/);
    expect((await client.runs.get(t.thread_id, second!)).status).toBe("success");
    const { values } = await client.threads.getState(t.thread_id);
    expect(texts(values)).toEqual(["human: zero", "ai: echo zero", "human: second", "ai: echo second"]);
  });
});
