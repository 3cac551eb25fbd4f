/**
 * A run's server-sent events, as the Agent Server names them: the graph runs
 * through `streamEvents` (v2), as in `@langchain/langgraph-api`, so that one
 * pass yields the stream modes the client asked for and, for the `events`
 * mode, the callback events besides. The mode `messages-tuple` is LangGraph's
 * `messages` mode and is sent as `messages`; with `stream_subgraphs` an
 * event from a subgraph is named `<mode>|<namespace>`.
 */

/** The stream modes served. `messages` (the deprecated partial-message mode) is not. */
export const STREAM_MODES = [
  "values",
  "updates",
  "messages-tuple",
  "custom",
  "events",
  "debug",
  "tasks",
  "checkpoints",
  "tools",
] as const;

/** A stream mode a run can be asked for. */
export type StreamMode = (typeof STREAM_MODES)[number];

/** One event of a run, before it is written as SSE. */
export interface RunEvent {
  event: string;
  data: unknown;
}

/** One callback event of LangChain's `streamEvents` v2, as far as it is read here. */
interface CallbackEvent {
  event: string;
  run_id: string;
  tags?: string[];
  data: { chunk?: unknown };
}

/** The part of a compiled graph a run streams through. */
export interface EventStreamingGraph {
  streamEvents(
    input: unknown,
    options: Record<string, unknown> & { version: "v2" },
  ): AsyncIterable<CallbackEvent> | Promise<AsyncIterable<CallbackEvent>>;
}

/** How a run streams. */
export interface StreamOptions {
  modes: readonly StreamMode[];
  subgraphs: boolean;
  /** The run's id: the root chain's callback run, so its chunks are told from nested chains'. */
  runId: string;
}

/**
 * Runs `graph` on `input` with `config` and yields the run's events in the
 * order the graph produces them. Resolves once the graph has finished
 * (rejects with what it threw).
 */
export async function* streamRunEvents(
  graph: EventStreamingGraph,
  input: unknown,
  config: Record<string, unknown>,
  { modes, subgraphs, runId }: StreamOptions,
): AsyncGenerator<RunEvent> {
  const graphModes = new Set<string>(modes.filter((mode) => mode !== "events" && mode !== "messages-tuple"));
  if (modes.includes("messages-tuple")) graphModes.add("messages");
  const events = await graph.streamEvents(input, {
    ...config,
    version: "v2",
    runId,
    subgraphs,
    streamMode: [...graphModes],
  });
  for await (const event of events) {
    if (event.tags?.includes("langsmith:hidden")) continue;
    if (event.event === "on_chain_stream" && (subgraphs || event.run_id === runId)) {
      const chunk = event.data.chunk as unknown[];
      const [namespace, mode, data] = (subgraphs ? chunk : [null, ...chunk]) as [string[] | null, string, unknown];
      const wanted = mode === "messages" ? modes.includes("messages-tuple") : graphModes.has(mode);
      if (!wanted) continue;
      yield { event: namespace?.length ? `${mode}|${namespace.join("|")}` : mode, data };
    } else if (modes.includes("events")) {
      yield { event: "events", data: event };
    }
  }
}

/**
 * JSON text of an event's data. LangChain messages become their dict form
 * with `type` beside the fields, as the Agent Server sends them.
 */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key: string, converted: unknown) {
    const raw = this[key];
    if (typeof raw === "object" && raw !== null && typeof (raw as { toDict?: unknown }).toDict === "function") {
      const { type, data } = (raw as { toDict(): { type: string; data: Record<string, unknown> } }).toDict();
      return { ...data, type };
    }
    return converted;
  });
}

/** An error as the Agent Server puts it in an `error` event. */
export function errorData(error: unknown): { error: string; message: string } {
  if (error instanceof Error) return { error: error.name, message: error.message };
  return { error: "Error", message: JSON.stringify(error) };
}
