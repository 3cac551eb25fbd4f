/**
 * The `debug`, `checkpoints` and `tasks` stream modes in the shapes the SDK's
 * types and LangGraph's own Agent Server (`@langchain/langgraph-api`'s
 * `streamState`) give them: checkpoint references beside the configs, and
 * nothing of the run's internals (its callback handlers, LangGraph's
 * `__pregel_*` keys).
 */
import { afterEach, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

// Once sent as LangGraph yields them: each config carried the run's callback handler (serialized as
// `{ lc: 1, type: "not_implemented", … EventStreamCallbackHandler }`) and `__pregel_abort_signals`, the
// payloads had `parentConfig` and no `checkpoint` / `parent_checkpoint`, as the Agent Server sends them.
it("debug, checkpoints and tasks events carry checkpoint references and none of the run's internals", async () => {
  const { client } = await openServer("agent-stream-modes");
  const { thread_id } = await client.threads.create();
  const events: { event: string; data: Record<string, unknown> }[] = [];
  const modes = ["debug", "checkpoints", "tasks"] as const;
  for await (const part of client.runs.stream(thread_id, "agent", { input: human("hi"), streamMode: [...modes] })) {
    events.push(part as unknown as { event: string; data: Record<string, unknown> });
  }
  const text = JSON.stringify(events);
  expect(text).not.toContain("__pregel_abort_signals");
  expect(text).not.toContain("callbacks");
  expect(text).not.toContain("parentConfig");

  const ref = (checkpointId: unknown) => ({
    thread_id,
    checkpoint_id: checkpointId,
    checkpoint_ns: "",
    checkpoint_map: null,
  });
  const checkpoints = events.filter((e) => e.event === "checkpoints").map((e) => e.data);
  expect(checkpoints.map((c) => c.next)).toEqual([["__start__"], ["agent"], []]);
  for (const checkpoint of checkpoints) {
    expect(Object.keys(checkpoint).sort()).toEqual(["config", "metadata", "next", "tasks", "values"]);
  }
  const debugCheckpoints = events
    .filter((e) => e.event === "debug" && e.data.type === "checkpoint")
    .map((e) => e.data.payload as Record<string, unknown>);
  expect(debugCheckpoints).toHaveLength(3);
  const ids = debugCheckpoints.map(
    (p) => (p.config as { configurable: { checkpoint_id: string } }).configurable.checkpoint_id,
  );
  expect(debugCheckpoints.map((p) => p.checkpoint)).toEqual(ids.map(ref));
  expect(debugCheckpoints.map((p) => p.parent_checkpoint)).toEqual([null, ref(ids[0]), ref(ids[1])]);
  expect((debugCheckpoints[1]!.parent_config as { configurable: unknown }).configurable).toMatchObject({
    thread_id,
    checkpoint_id: ids[0],
  });
  // The history answers the same checkpoints.
  const history = await client.threads.getHistory(thread_id);
  expect(history.map((s) => s.checkpoint.checkpoint_id)).toEqual([...ids].reverse());
  expect(events.filter((e) => e.event === "tasks").map((e) => e.data.name)).toEqual(["agent", "agent"]);
});
