/**
 * The graphs a local agent server serves: compiled LangGraph graphs, given
 * the server's saver and store when they were compiled without, and refused
 * when compiled with another saver (their runs would not be the server's
 * threads).
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { EventStreamingGraph } from "./stream.js";
import type { Snapshot } from "./state.js";

/** What the server uses of a compiled graph (a LangGraph `CompiledStateGraph` has it all). */
export interface ServedGraph extends EventStreamingGraph {
  checkpointer?: unknown;
  store?: unknown;
  getState(config: RunnableConfig, options?: { subgraphs?: boolean }): Promise<Snapshot>;
  getStateHistory(
    config: RunnableConfig,
    options?: { limit?: number; before?: RunnableConfig; filter?: Record<string, unknown> },
  ): AsyncIterable<Snapshot>;
  updateState(config: RunnableConfig, values: unknown, asNode?: string): Promise<RunnableConfig>;
  /** Its drawable graph (`assistants.getGraph`); `xray` draws its subgraphs too (a number: that many levels). */
  getGraphAsync?(config?: RunnableConfig & { xray?: boolean | number }): Promise<{ toJSON(): unknown }>;
}

/**
 * Binds each graph to `saver` and `store` (where it has none) and checks it
 * has no other saver. The record returned has no prototype: a graph name
 * asked by a client (`assistant_id`, a thread's `graph_id`) finds only the
 * graphs given, never `constructor` or `toString`.
 *
 * @throws Error When a graph was compiled with another checkpointer.
 */
export function bindGraphs(
  graphs: Readonly<Record<string, ServedGraph>>,
  saver: object,
  store: object | undefined,
): Readonly<Record<string, ServedGraph>> {
  const names = Object.keys(graphs);
  const served: Record<string, ServedGraph> = Object.create(null) as Record<string, ServedGraph>;
  if (names.length === 0)
    throw new Error("createLocalAgentServer: graphs must name at least one graph, e.g. { graphs: { agent: graph } }.");
  for (const name of names) {
    const graph = graphs[name]!;
    if (typeof graph.streamEvents !== "function" || typeof graph.getState !== "function") {
      throw new Error(
        `createLocalAgentServer: graphs.${name} is not a compiled LangGraph graph (call .compile() on it).`,
      );
    }
    if (graph.checkpointer !== undefined && graph.checkpointer !== saver) {
      throw new Error(
        `createLocalAgentServer: graphs.${name} was compiled with another checkpointer; compile it with the server's saver, or with none.`,
      );
    }
    graph.checkpointer = saver;
    if (store !== undefined && graph.store === undefined) graph.store = store;
    served[name] = graph;
  }
  return served;
}
