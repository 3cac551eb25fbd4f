/**
 * The Agent Server routes the LangGraph SDK's `Client` and `useStream` call,
 * on a Hono app: threads (create, get, patch, delete, search, copy), thread state
 * and history, state updates and metadata patches, a thread's own stream, and
 * runs (stream, create, wait, join, join the stream, cancel, cancel many, get, list). Paths, bodies and answers follow the Agent
 * Server's API; what it does not serve answers 404 with the route named.
 */
import { Hono, type Context } from "hono";
import type { RunnableConfig } from "@langchain/core/runnables";
import { ThreadBusyError } from "../runs/errors.js";
import { DecryptionError } from "../core/errors.js";
import { isPlainObject, isStringList } from "../core/guards.js";
import { containsJson, type ThreadRecord, type ThreadStatus } from "./threads.js";
import { toJsonText } from "./stream.js";
import type { ServedGraph } from "./graphs.js";
import { toThreadState, type Snapshot } from "./state.js";
import { busy, reply, selected, STATE_FIELDS, THREAD_FIELDS } from "./replies.js";
import { registerRunRoutes, type RouteContext } from "./run-routes.js";
import { registerAssistantRoutes } from "./assistants.js";
import { registerStoreRoutes } from "./store-routes.js";
import { registerPruneRoute } from "./thread-prune.js";
import { registerStatePatchRoute } from "./state-patch.js";
import { registerThreadStreamRoute } from "./thread-stream.js";
import { registerCancelRunsRoute } from "./cancel-runs.js";

export type { RouteContext } from "./run-routes.js";
import {
  BadRequest,
  body,
  checkOneOf,
  optionalBoolean,
  optionalCheckpoint,
  optionalNumber,
  optionalObject,
  optionalString,
  selectOf,
  storableThreadId,
} from "./input.js";

const STATUSES: readonly ThreadStatus[] = ["idle", "busy", "interrupted", "error"];

/** The Hono app serving the routes. */
export function createRoutes(context: RouteContext): Hono {
  const app = new Hono();
  const { threads } = context;

  app.onError((error, c) => {
    if (error instanceof BadRequest) return reply(c, { error: "Bad Request", message: error.message }, 422);
    // The saver's key does not open what was read: a wrong key, a row altered or moved on disk, or another
    // tab's key change (KeyChangedError is one). No retry can succeed until the app opens it again with the
    // right key. A 5xx, the SDK asked again for some 20 s; a 409 it does not. The body names which.
    if (error instanceof DecryptionError) return reply(c, { error: error.name, message: error.message }, 409);
    return reply(c, { error: error.name, message: error.message }, 500);
  });
  app.notFound((c) =>
    reply(c, { error: `${c.req.method} ${c.req.path} is not served by the local agent server` }, 404),
  );

  /** The graph a thread ran with, or undefined before its first run. */
  const graphOf = (thread: ThreadRecord): ServedGraph | undefined => {
    const graphId = thread.metadata.graph_id;
    return typeof graphId === "string" ? context.graphs[graphId] : undefined;
  };
  /**
   * The record as the Agent Server answers it: with the thread's latest
   * `values` and each task's `interrupts`, read through the saver (so an
   * encrypted one keeps them encrypted at rest: the record store holds none).
   * A state LangGraph cannot read (a run that failed on its input leaves it in
   * the pending writes, which getState applies and throws on) is answered
   * without values, as the Agent Server's record of such a run has none: one
   * such thread would otherwise fail every search (the app's thread list).
   * `threads.getState` still answers the error.
   */
  const withState = async (thread: ThreadRecord) => {
    const graph = graphOf(thread);
    // `state_updated_at` (the SDK's Thread has it): the latest checkpoint's time; the record's creation
    // before any, and its last change when the state cannot be read (a failed run's end wrote it).
    const none = { ...thread, state_updated_at: thread.created_at, values: undefined, interrupts: undefined };
    if (!graph) return none;
    let snapshot;
    try {
      snapshot = await graph.getState({ configurable: { thread_id: thread.thread_id } });
    } catch {
      return { ...none, state_updated_at: thread.updated_at };
    }
    const interrupts = Object.fromEntries(snapshot.tasks.map((task) => [task.id, task.interrupts]));
    const stateUpdatedAt = snapshot.createdAt ? new Date(snapshot.createdAt).toISOString() : thread.created_at;
    return { ...thread, state_updated_at: stateUpdatedAt, values: snapshot.values, interrupts };
  };

  const threadOr404 = async (c: Context): Promise<ThreadRecord | Response> =>
    (await threads.get(c.req.param("thread_id")!)) ?? reply(c, { error: "Thread not found" }, 404);

  app.post("/threads", async (c) => {
    const json = await body(c);
    const asked = optionalString(json, "thread_id");
    const threadId = asked === undefined ? crypto.randomUUID() : storableThreadId(asked);
    const ifExists = checkOneOf(optionalString(json, "if_exists") ?? "raise", ["raise", "do_nothing"], "if_exists");
    // Not applied here: refused rather than dropped, so a thread "created with its state" is not empty.
    if (Array.isArray(json.supersteps) && json.supersteps.length > 0) {
      throw new BadRequest(
        "supersteps are not served by the local agent server: create the thread with its graphId (graph_id in its metadata), then updateState.",
      );
    }
    refuseTtl(json);
    // A leftover record of a thread once under this id is left: the next start's sweep drops it, this
    // thread's creation time not being the one recorded (leftover-threads.ts).
    const { thread, created } = await threads.create(threadId, optionalObject(json, "metadata") ?? {});
    if (!created && ifExists === "raise") return reply(c, { error: `Thread ${threadId} already exists` }, 409);
    return reply(c, await withState(thread));
  });
  /**
   * The threads a search or count body asks for, sorted, with their state,
   * and how many match in all. A `values` filter (JSON containment of the
   * thread's latest values, as `jsonb @>`) reads every thread's state the
   * other filters leave, then pages: the record store holds no values.
   */
  const searchThreads = async (json: Record<string, unknown>, page: { limit: number; offset: number }) => {
    const status = optionalString(json, "status");
    const ids = json.ids;
    if (ids !== undefined && ids !== null && !isStringList(ids)) {
      throw new BadRequest(`ids must be a list of thread ids; got ${JSON.stringify(ids)}.`);
    }
    const values = optionalObject(json, "values");
    const sortBy = checkOneOf(
      optionalString(json, "sort_by") ?? "created_at",
      ["created_at", "updated_at", "thread_id", "status", "state_updated_at"],
      "sort_by",
    );
    const sortOrder = checkOneOf(optionalString(json, "sort_order") ?? "desc", ["asc", "desc"], "sort_order");
    const options = {
      ...(Array.isArray(ids) ? { ids: ids as string[] } : {}),
      metadata: optionalObject(json, "metadata"),
      status: status === undefined ? undefined : checkOneOf(status, STATUSES, "status"),
      // The record store holds no state: by the state's time, sorted here after reading every state.
      sortBy: sortBy === "state_updated_at" ? "created_at" : sortBy,
      sortOrder,
    };
    if (values === undefined && sortBy !== "state_updated_at") {
      const result = await threads.search({ ...options, ...page });
      return { threads: await Promise.all(result.threads.map(withState)), total: result.total };
    }
    const all = await threads.search({ ...options, limit: Number.MAX_SAFE_INTEGER, offset: 0 });
    const matching = (await Promise.all(all.threads.map(withState))).filter(
      // The values as answered (LangChain messages in their JSON form), not as LangGraph holds them.
      (thread) =>
        values === undefined ||
        (thread.values !== undefined && containsJson(JSON.parse(toJsonText(thread.values)), values)),
    );
    if (sortBy === "state_updated_at") {
      // A stable sort: ties keep the store's order (by creation, in the same direction).
      const direction = sortOrder === "asc" ? 1 : -1;
      const time = (thread: { state_updated_at: string }) => Date.parse(thread.state_updated_at);
      matching.sort((a, b) => direction * (time(a) - time(b)));
    }
    return { threads: matching.slice(page.offset, page.offset + page.limit), total: matching.length };
  };
  app.post("/threads/search", async (c) => {
    const json = await body(c);
    const page = { limit: optionalNumber(json, "limit") ?? 10, offset: optionalNumber(json, "offset") ?? 0 };
    const select = selectOf(json.select, THREAD_FIELDS, false);
    // Its path syntax is the Agent Server's own (PostgreSQL's): refused rather than guessed or dropped.
    if (json.extract !== undefined && json.extract !== null) {
      throw new BadRequest("extract is not served by the local agent server: select the fields, and read them.");
    }
    const result = await searchThreads(json, page);
    c.header("X-Pagination-Total", String(result.total));
    return reply(
      c,
      result.threads.map((thread) => selected(thread, select)),
    );
  });
  app.post("/threads/count", async (c) => {
    const json = await body(c);
    return reply(c, (await searchThreads(json, { limit: 0, offset: 0 })).total);
  });
  app.get("/threads/:thread_id", async (c) => {
    // The SDK's `include` (extra fields, such as `ttl`) is not read: every field a record has is answered, and
    // one it has not (a TTL: local threads never expire) is absent, as LangGraph's own server answers it.
    const thread = await threadOr404(c);
    return thread instanceof Response ? thread : reply(c, await withState(thread));
  });
  app.patch("/threads/:thread_id", async (c) => {
    const json = await body(c);
    refuseTtl(json);
    const thread = await threads.patch(c.req.param("thread_id"), { metadata: optionalObject(json, "metadata") });
    if (!thread) return reply(c, { error: "Thread not found" }, 404);
    // The SDK's `returnMinimal` (typed to resolve to nothing): no record, so no state read for it.
    if (/(^|[\s,;])return=minimal($|[\s,;])/i.test(c.req.header("Prefer") ?? "")) return c.body(null, 204);
    return reply(c, await withState(thread));
  });
  // As the Agent Server does: a new id, the source's metadata with the new id as `thread_id`, status idle,
  // and the checkpoints as they are now (the saver reads them in one transaction: a run going on the
  // source is copied up to its last committed checkpoint). The checkpoints go first: a record is never
  // left without them.
  app.post("/threads/:thread_id/copy", async (c) => {
    const source = await threadOr404(c);
    if (source instanceof Response) return source;
    const threadId = crypto.randomUUID();
    await context.copyThread(source.thread_id, threadId);
    const { thread } = await threads.create(threadId, { ...source.metadata, thread_id: threadId });
    return reply(c, await withState(thread));
  });
  app.delete("/threads/:thread_id", async (c) => {
    const threadId = c.req.param("thread_id");
    if (!(await threads.get(threadId))) return reply(c, { error: "Thread not found" }, 404);
    await context.deleteThread(threadId);
    return c.body(null, 204);
  });

  const emptyState = (): Snapshot => ({ values: {}, next: [], tasks: [] });
  const readState = async (
    c: Context,
    checkpoint: Record<string, unknown>,
    subgraphs: boolean,
    select: readonly string[],
  ) => {
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const graph = graphOf(thread);
    const configurable = { ...checkpoint, thread_id: thread.thread_id };
    const snapshot = graph ? await graph.getState({ configurable }, { subgraphs }) : emptyState();
    return reply(c, selected(toThreadState(snapshot), select));
  };
  const subgraphsQuery = (c: Context) => c.req.query("subgraphs") === "true" || c.req.query("subgraphs") === "1";
  const selectQuery = (c: Context) => selectOf(c.req.queries("select"), STATE_FIELDS, true);

  app.get("/threads/:thread_id/state", (c) => readState(c, {}, subgraphsQuery(c), selectQuery(c)));
  app.get("/threads/:thread_id/state/:checkpoint_id", (c) =>
    readState(c, { checkpoint_id: c.req.param("checkpoint_id") }, subgraphsQuery(c), selectQuery(c)),
  );
  app.post("/threads/:thread_id/state/checkpoint", async (c) => {
    const json = await body(c);
    const checkpoint = optionalCheckpoint(json, "checkpoint") ?? {};
    const select = selectOf(json.select, STATE_FIELDS, true);
    return readState(c, checkpoint, optionalBoolean(json, "subgraphs") ?? false, select);
  });
  app.post("/threads/:thread_id/state", async (c) => {
    const json = await body(c);
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const graph = graphOf(thread);
    if (!graph) {
      // The graph whose channels take the update: the thread's graph_id, set by a run or at create.
      const error =
        "The thread has no graph yet: create it with a graphId (graph_id in its metadata), or start a run on it first";
      return reply(c, { error }, 409);
    }
    const configurable: Record<string, unknown> = {
      ...optionalCheckpoint(json, "checkpoint"),
      thread_id: thread.thread_id,
    };
    const checkpointId = optionalString(json, "checkpoint_id");
    if (checkpointId) configurable.checkpoint_id = checkpointId;
    const asNode = optionalString(json, "as_node");
    // Under the thread's run lock, as a run: an update while a run goes would be written
    // under the run's next checkpoint and lost, so it is refused as the Agent Server does.
    try {
      // The thread may have been deleted since it was read above: checked again under the lock,
      // as a run checks at its start, or the update would write onto a deleted thread (helper-56).
      const result = await context.runs.whileIdle(thread.thread_id, async () => {
        if (!(await threads.get(thread.thread_id))) return undefined;
        const updated = await graph.updateState({ configurable }, json.values, asNode);
        // The status follows the state, as a run's end sets it: a node left to run (a breakpoint, or an
        // update as __start__) is a pause; none, idle (an update answering a breakpoint as the node).
        const next = (await graph.getState({ configurable: { thread_id: thread.thread_id } }).catch(() => undefined))
          ?.next;
        if (next) await threads.patch(thread.thread_id, { status: next.length > 0 ? "interrupted" : "idle" });
        return updated;
      });
      if (!result) return reply(c, { error: "Thread not found" }, 404);
      return reply(c, { checkpoint: result.configurable });
    } catch (error) {
      if (error instanceof ThreadBusyError) return busy(c, thread.thread_id);
      // LangGraph refused the update (a node the graph does not have, values its channels refuse)
      // before writing it: the client's mistake. By name: an app may bundle another LangGraph copy.
      if (error instanceof Error && error.name === "InvalidUpdateError") throw new BadRequest(error.message);
      throw error;
    }
  });
  const history = async (c: Context, json: Record<string, unknown>) => {
    // Checked before the thread is read: bad input is answered 422 whatever the thread.
    const checkpoint = optionalCheckpoint(json, "checkpoint");
    const before = beforeOf(json);
    const limit = optionalNumber(json, "limit") ?? 10;
    const filter = optionalObject(json, "metadata");
    const select = selectOf(json.select, STATE_FIELDS, true);
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const graph = graphOf(thread);
    if (!graph) return reply(c, []);
    const states = [];
    const iterator = graph.getStateHistory(
      { configurable: { ...checkpoint, thread_id: thread.thread_id } },
      { limit, before, filter },
    );
    for await (const snapshot of iterator) states.push(selected(toThreadState(snapshot), select));
    return reply(c, states);
  };
  app.post("/threads/:thread_id/history", async (c) => history(c, await body(c)));
  app.get("/threads/:thread_id/history", (c) =>
    history(c, { limit: Number(c.req.query("limit") ?? 10), before: c.req.query("before") }),
  );

  registerRunRoutes(app, context, threadOr404);
  registerCancelRunsRoute(app, context);
  registerPruneRoute(app, context);
  registerStatePatchRoute(app, context, threadOr404);
  registerThreadStreamRoute(app, context, threadOr404);
  registerAssistantRoutes(app, context.graphs, new Date().toISOString());
  registerStoreRoutes(app, context.store);
  return app;
}

/**
 * Refuses a thread's `ttl` (the Agent Server deletes the thread when it
 * expires): the page's records never expire, so one taken would be dropped.
 * @throws {BadRequest} a ttl given.
 */
function refuseTtl(json: Record<string, unknown>): void {
  if (json.ttl !== undefined && json.ttl !== null) {
    throw new BadRequest("ttl is not served by the local agent server: its threads are kept until deleted.");
  }
}

/**
 * A history request's `before`: a checkpoint id, or a config naming one (the
 * SDK's type), as LangGraph's `before`; undefined if absent or null.
 * @throws {BadRequest} anything else (a number was dropped: the whole history answered).
 */
function beforeOf(json: Record<string, unknown>): RunnableConfig | undefined {
  const before = json.before;
  if (before === undefined || before === null) return undefined;
  if (typeof before === "string") return { configurable: { checkpoint_id: before } };
  const configurable = isPlainObject(before) ? before.configurable : undefined;
  if (isPlainObject(configurable) && typeof configurable.checkpoint_id === "string") return before as RunnableConfig;
  throw new BadRequest(
    `before must be a checkpoint id, or { configurable: { checkpoint_id } }; got ${JSON.stringify(before)}.`,
  );
}
