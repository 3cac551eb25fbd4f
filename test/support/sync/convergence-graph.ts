/**
 * The graph every device of the convergence run executes
 * (test/support/sync/convergence.ts), in Node and in a Chromium page alike:
 * nothing here imports a Node module.
 */
import {
  DeltaValue,
  END,
  START,
  StateGraph,
  StateSchema,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph/web";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { z } from "zod";

/**
 * `log` on a delta channel: a checkpoint stores only its step's entries, the
 * value is rebuilt from ancestors' writes, and a prune given the graph's
 * channels stores a snapshot at a checkpoint already synced (the case that
 * left other devices with an empty log before 57100a5).
 */
const State = new StateSchema({
  log: new DeltaValue(
    z.array(z.string()).default(() => []),
    {
      inputSchema: z.array(z.string()),
      reducer: (current: string[], writes: string[][]) => writes.reduce((all, entries) => all.concat(entries), current),
    },
  ),
});

/** A tool node that throws when the invocation's `configurable.fail` names it. */
function tool(name: string) {
  return (state: typeof State.State, config: LangGraphRunnableConfig) => {
    const fail = config.configurable?.fail as string[] | undefined;
    if (fail?.includes(name)) throw new Error(`tool ${name} failed (on purpose)`);
    return { log: [`${name}@${state.log.length}`] };
  };
}

/**
 * agent → sub (a subgraph: checkpoints under its own `checkpoint_ns`) →
 * two tools in parallel → END. A failing tool leaves the step's checkpoint
 * with the other tool's pending writes, for a resume on any device.
 */
export function convergenceGraph(saver: BaseCheckpointSaver) {
  const sub = new StateGraph(State)
    .addNode("inner", (state) => ({ log: [`inner@${state.log.length}`] }))
    .addEdge(START, "inner")
    .addEdge("inner", END)
    .compile();
  return new StateGraph(State)
    .addNode("agent", (state) => ({ log: [`agent@${state.log.length}`] }))
    .addNode("sub", sub)
    .addNode("toolA", tool("a"))
    .addNode("toolB", tool("b"))
    .addEdge(START, "agent")
    .addEdge("agent", "sub")
    .addEdge("sub", "toolA")
    .addEdge("sub", "toolB")
    .addEdge("toolA", END)
    .addEdge("toolB", END)
    .compile({ checkpointer: saver });
}
