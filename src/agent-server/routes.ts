/**
 * The Agent Server routes the LangGraph SDK's `Client` and `useStream` call,
 * on a Hono app: threads (create, get, patch, delete, search), thread state
 * and history, state updates, and runs (stream, create, wait, join, join the
 * stream, cancel, get, list). Paths, bodies and answers follow the Agent
 * Server's API; what it does not serve answers 404 with the route named.
 */
import { Hono, type Context } from "hono";
import { Command } from "@langchain/langgraph/web";
import type { RunnableConfig } from "@langchain/core/runnables";
import { isThreadRunning, type MultitaskStrategy } from "../runs/coordinator.js";
import type { RunLockManager } from "../runs/locks.js";
import type { AgentThreadStore, ThreadRecord, ThreadStatus } from "./threads.js";
import type { RunHandle, RunRegistry } from "./runs.js";
import { STREAM_MODES, toJsonText, type StreamMode } from "./stream.js";
import { toThreadState, type Snapshot } from "./state.js";
import {
  BadRequest,
  body,
  checkOneOf,
  optionalBoolean,
  optionalNumber,
  optionalObject,
  optionalString,
} from "./input.js";
import type { ServedGraph } from "./graphs.js";

/** What the routes work with. */
export interface RouteContext {
  graphs: Readonly<Record<string, ServedGraph>>;
  threads: AgentThreadStore;
  runs: RunRegistry;
  dbName: string;
  locks: RunLockManager | undefined;
  /** Deletes the thread's checkpoints and runs. */
  deleteCheckpoints(threadId: string): Promise<void>;
}

const STRATEGIES: readonly MultitaskStrategy[] = ["reject", "enqueue", "interrupt", "rollback"];
const STATUSES: readonly ThreadStatus[] = ["idle", "busy", "interrupted", "error"];

/** The Hono app serving the routes. */
export function createRoutes(context: RouteContext): Hono {
  const app = new Hono();
  const { threads } = context;

  app.onError((error, c) => {
    if (error instanceof BadRequest) return reply(c, { error: "Bad Request", message: error.message }, 422);
    return reply(c, { error: error.name, message: error.message }, 500);
  });
  app.notFound((c) =>
    reply(c, { error: `${c.req.method} ${c.req.path} is not served by the local agent server` }, 404),
  );

  const threadOr404 = async (c: Context): Promise<ThreadRecord | Response> =>
    (await threads.get(c.req.param("thread_id")!)) ?? reply(c, { error: "Thread not found" }, 404);

  app.post("/threads", async (c) => {
    const json = await body(c);
    const threadId = optionalString(json, "thread_id") ?? crypto.randomUUID();
    const ifExists = checkOneOf(optionalString(json, "if_exists") ?? "raise", ["raise", "do_nothing"], "if_exists");
    const { thread, created } = await threads.create(threadId, optionalObject(json, "metadata") ?? {});
    if (!created && ifExists === "raise") return reply(c, { error: `Thread ${threadId} already exists` }, 409);
    return reply(c, thread);
  });
  app.post("/threads/search", async (c) => {
    const json = await body(c);
    const status = optionalString(json, "status");
    const result = await threads.search({
      metadata: optionalObject(json, "metadata"),
      status: status === undefined ? undefined : checkOneOf(status, STATUSES, "status"),
      limit: optionalNumber(json, "limit") ?? 10,
      offset: optionalNumber(json, "offset") ?? 0,
      sortBy: checkOneOf(
        optionalString(json, "sort_by") ?? "created_at",
        ["created_at", "updated_at", "thread_id"],
        "sort_by",
      ),
      sortOrder: checkOneOf(optionalString(json, "sort_order") ?? "desc", ["asc", "desc"], "sort_order"),
    });
    c.header("X-Pagination-Total", String(result.total));
    return reply(c, result.threads);
  });
  app.get("/threads/:thread_id", async (c) => {
    const thread = await threadOr404(c);
    return thread instanceof Response ? thread : reply(c, thread);
  });
  app.patch("/threads/:thread_id", async (c) => {
    const json = await body(c);
    const thread = await threads.patch(c.req.param("thread_id"), { metadata: optionalObject(json, "metadata") });
    return thread ? reply(c, thread) : reply(c, { error: "Thread not found" }, 404);
  });
  app.delete("/threads/:thread_id", async (c) => {
    const threadId = c.req.param("thread_id");
    if (!(await threads.delete(threadId))) return reply(c, { error: "Thread not found" }, 404);
    await context.deleteCheckpoints(threadId);
    return c.body(null, 204);
  });

  /** The graph a thread ran with, or undefined before its first run. */
  const graphOf = (thread: ThreadRecord): ServedGraph | undefined => {
    const graphId = thread.metadata.graph_id;
    return typeof graphId === "string" ? context.graphs[graphId] : undefined;
  };
  const emptyState = (): Snapshot => ({ values: {}, next: [], tasks: [] });
  const readState = async (c: Context, checkpoint: Record<string, unknown>, subgraphs: boolean) => {
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const graph = graphOf(thread);
    const configurable = { ...checkpoint, thread_id: thread.thread_id };
    const snapshot = graph ? await graph.getState({ configurable }, { subgraphs }) : emptyState();
    return reply(c, toThreadState(snapshot));
  };
  const subgraphsQuery = (c: Context) => c.req.query("subgraphs") === "true" || c.req.query("subgraphs") === "1";

  app.get("/threads/:thread_id/state", (c) => readState(c, {}, subgraphsQuery(c)));
  app.get("/threads/:thread_id/state/:checkpoint_id", (c) =>
    readState(c, { checkpoint_id: c.req.param("checkpoint_id") }, subgraphsQuery(c)),
  );
  app.post("/threads/:thread_id/state/checkpoint", async (c) => {
    const json = await body(c);
    return readState(c, optionalObject(json, "checkpoint") ?? {}, optionalBoolean(json, "subgraphs") ?? false);
  });
  app.post("/threads/:thread_id/state", async (c) => {
    const json = await body(c);
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const graph = graphOf(thread);
    if (!graph) return reply(c, { error: "The thread has no graph yet: start a run on it first" }, 409);
    const configurable: Record<string, unknown> = {
      ...optionalObject(json, "checkpoint"),
      thread_id: thread.thread_id,
    };
    const checkpointId = optionalString(json, "checkpoint_id");
    if (checkpointId) configurable.checkpoint_id = checkpointId;
    const result = await graph.updateState({ configurable }, json.values, optionalString(json, "as_node"));
    return reply(c, { checkpoint: result.configurable });
  });
  const history = async (c: Context, json: Record<string, unknown>) => {
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const graph = graphOf(thread);
    if (!graph) return reply(c, []);
    const before = json.before;
    const states = [];
    const iterator = graph.getStateHistory(
      { configurable: { ...optionalObject(json, "checkpoint"), thread_id: thread.thread_id } },
      {
        limit: optionalNumber(json, "limit") ?? 10,
        before: typeof before === "string" ? { configurable: { checkpoint_id: before } } : (before as RunnableConfig),
        filter: optionalObject(json, "metadata"),
      },
    );
    for await (const snapshot of iterator) states.push(toThreadState(snapshot));
    return reply(c, states);
  };
  app.post("/threads/:thread_id/history", async (c) => history(c, await body(c)));
  app.get("/threads/:thread_id/history", (c) =>
    history(c, { limit: Number(c.req.query("limit") ?? 10), before: c.req.query("before") }),
  );

  registerRunRoutes(app, context, threadOr404);
  return app;
}

function registerRunRoutes(
  app: Hono,
  context: RouteContext,
  threadOr404: (c: Context) => Promise<ThreadRecord | Response>,
): void {
  const { threads, runs } = context;

  /** Starts the run a body describes, or answers why it cannot. */
  const startRun = async (c: Context): Promise<RunHandle | Response> => {
    const json = await body(c);
    const threadId = c.req.param("thread_id")!;
    const assistantId = optionalString(json, "assistant_id");
    const graph = assistantId === undefined ? undefined : context.graphs[assistantId];
    if (!graph || assistantId === undefined) {
      return reply(
        c,
        {
          error: `No graph named ${JSON.stringify(assistantId)}: createLocalAgentServer({ graphs }) has ${Object.keys(context.graphs).join(", ")}`,
        },
        404,
      );
    }
    const ifNotExists = checkOneOf(
      optionalString(json, "if_not_exists") ?? "reject",
      ["reject", "create"],
      "if_not_exists",
    );
    if (ifNotExists === "create") await threads.create(threadId, {});
    else if ((await threadOr404(c)) instanceof Response) return reply(c, { error: "Thread not found" }, 404);
    const multitask = checkOneOf(
      optionalString(json, "multitask_strategy") ?? "reject",
      STRATEGIES,
      "multitask_strategy",
    );
    if (multitask === "reject" && (await isThreadRunning(threadId, { dbName: context.dbName, locks: context.locks }))) {
      return reply(c, { error: `Thread ${threadId} is busy with another run (multitask_strategy "reject")` }, 409);
    }
    const requested = json.stream_mode;
    const modes = (Array.isArray(requested) ? requested : requested === undefined ? ["values"] : [requested]).map(
      (mode) => checkOneOf(String(mode), STREAM_MODES, "stream_mode"),
    );
    await threads.patch(threadId, { metadata: { graph_id: assistantId, assistant_id: assistantId } });
    const command = optionalObject(json, "command");
    const config = (optionalObject(json, "config") ?? {}) as RunnableConfig;
    const checkpointId = optionalString(json, "checkpoint_id");
    const configurable = {
      ...config.configurable,
      ...optionalObject(json, "checkpoint"),
      ...(checkpointId ? { checkpoint_id: checkpointId } : {}),
      thread_id: threadId,
      graph_id: assistantId,
    };
    return runs.start({
      threadId,
      assistantId,
      graph,
      input: command ? new Command(command) : (json.input ?? null),
      config: {
        ...config,
        configurable,
        ...(json.context !== undefined ? { context: json.context } : {}),
        ...(json.interrupt_before !== undefined ? { interruptBefore: json.interrupt_before } : {}),
        ...(json.interrupt_after !== undefined ? { interruptAfter: json.interrupt_after } : {}),
      } as RunnableConfig,
      modes: modes as StreamMode[],
      subgraphs: optionalBoolean(json, "stream_subgraphs") ?? false,
      multitask,
      metadata: optionalObject(json, "metadata") ?? {},
    });
  };
  const location = (run: RunHandle) => `/threads/${run.record.thread_id}/runs/${run.record.run_id}`;
  const runOr404 = async (c: Context): Promise<RunHandle | Response> =>
    (await runs.find(c.req.param("thread_id")!, c.req.param("run_id")!)) ?? reply(c, { error: "Run not found" }, 404);
  const finalValues = async (c: Context, run: RunHandle) => {
    let error: string | undefined;
    for await (const event of run.follow()) if (event.event === "error") error = event.data;
    if (error !== undefined) return reply(c, { __error__: JSON.parse(error) as unknown });
    const thread = await threads.get(run.record.thread_id);
    const graph = thread && context.graphs[run.record.assistant_id];
    const snapshot = graph ? await graph.getState({ configurable: { thread_id: run.record.thread_id } }) : undefined;
    return reply(c, snapshot?.values ?? {});
  };

  app.post("/threads/:thread_id/runs/stream", async (c) => {
    const run = await startRun(c);
    if (run instanceof Response) return run;
    return sse(run.follow(), { "Content-Location": location(run) });
  });
  app.post("/threads/:thread_id/runs", async (c) => {
    const run = await startRun(c);
    if (run instanceof Response) return run;
    c.header("Content-Location", location(run));
    return reply(c, run.record);
  });
  app.post("/threads/:thread_id/runs/wait", async (c) => {
    const run = await startRun(c);
    if (run instanceof Response) return run;
    c.header("Content-Location", location(run));
    return finalValues(c, run);
  });
  app.get("/threads/:thread_id/runs", async (c) => reply(c, await runs.list(c.req.param("thread_id"))));
  app.get("/threads/:thread_id/runs/:run_id", async (c) => {
    const run = await runOr404(c);
    return run instanceof Response ? run : reply(c, run.record);
  });
  app.get("/threads/:thread_id/runs/:run_id/join", async (c) => {
    const run = await runOr404(c);
    return run instanceof Response ? run : finalValues(c, run);
  });
  app.get("/threads/:thread_id/runs/:run_id/stream", async (c) => {
    const run = await runOr404(c);
    if (run instanceof Response) return run;
    const lastEventId = Number(c.req.header("Last-Event-ID") ?? -1);
    return sse(run.follow(Number.isInteger(lastEventId) ? lastEventId : -1), {});
  });
  app.post("/threads/:thread_id/runs/:run_id/cancel", async (c) => {
    const run = await runOr404(c);
    if (run instanceof Response) return run;
    const action = checkOneOf(c.req.query("action") ?? "interrupt", ["interrupt", "rollback"], "action");
    const cancelled = run.cancel(action);
    if (c.req.query("wait") === "1" || c.req.query("wait") === "true") await cancelled;
    else cancelled.catch(() => undefined);
    return c.body(null, 202);
  });
}

/**
 * A JSON response. LangChain messages go out in their dict form (as the Agent
 * Server sends them), not as LangChain's serialized constructor form.
 */
function reply(c: Context, value: unknown, status = 200): Response {
  return c.body(toJsonText(value), status as 200, { "Content-Type": "application/json" });
}

/** A server-sent-events response of `events`; the run goes on if the client leaves. */
function sse(
  events: AsyncGenerator<{ id: number; event: string; data: string }>,
  headers: Record<string, string>,
): Response {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await events.next();
      if (next.done) return controller.close();
      const { id, event, data } = next.value;
      controller.enqueue(encoder.encode(`id: ${id}\nevent: ${event}\ndata: ${data}\n\n`));
    },
    async cancel() {
      await events.return(undefined);
    },
  });
  return new Response(stream, {
    headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-store", ...headers },
  });
}
