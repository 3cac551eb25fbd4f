/**
 * The run routes of the local agent server: runs (stream, create, wait, join,
 * join the stream, cancel, get, list), each started through the registry
 * (runs.ts) and answered in the Agent Server's shapes.
 */
import type { Context, Hono } from "hono";
import type { BaseStore } from "@langchain/langgraph-checkpoint";
import { Command, Send } from "@langchain/langgraph/web";
import type { RunnableConfig } from "@langchain/core/runnables";
import { isThreadRunning, type MultitaskStrategy } from "../runs/coordinator.js";
import { ThreadBusyError } from "../runs/errors.js";
import type { ThreadRecord } from "./threads.js";
import type { RunRecord } from "./records.js";
import { isFinal } from "./run-log.js";
import type { RunHandle } from "./run-handles.js";
import { STREAM_MODES, type StreamMode } from "./stream.js";
import { onlyModes, queryFlag, runHeaders, sse, withEnd } from "./run-replies.js";
import { registerStatelessRunRoutes, type OwnThread } from "./stateless-runs.js";
import {
  BadRequest,
  body,
  checkOneOf,
  optionalBoolean,
  optionalCheckpoint,
  optionalNumber,
  optionalObject,
  optionalString,
  storableThreadId,
} from "./input.js";
import { busy, reply } from "./replies.js";
import { durabilityOf, interruptNodesOf, runConfigOf, strictResumeOf } from "./run-options.js";
import type { RunLockManager } from "../runs/locks.js";
import type { RunRegistry } from "./runs.js";
import type { AgentThreadStore } from "./threads.js";
import type { ServedGraph } from "./graphs.js";

/** What the routes work with. */
export interface RouteContext {
  graphs: Readonly<Record<string, ServedGraph>>;
  threads: AgentThreadStore;
  runs: RunRegistry;
  dbName: string;
  locks: RunLockManager | undefined;
  /** Aborted when the server closes: a thread's open stream ends then, instead of polling a closed server. */
  closed: AbortSignal;
  /** Deletes the thread: its runs stopped, then its checkpoints, runs and record (RunRegistry.deleteThread). */
  deleteThread(threadId: string): Promise<void>;
  /** Deletes the thread again later, until a delete succeeds (a thread-less run's whose delete failed). */
  deleteThreadLater(threadId: string): void;
  /** Records a thread-less run's own thread as a leftover, before its first delete (leftover-threads.ts). */
  recordLeftover(threadId: string): Promise<void>;
  /** Copies the thread's checkpoints and pending writes under another id (the saver's copyThread). */
  copyThread(sourceThreadId: string, targetThreadId: string): Promise<void>;
  /** Keeps the newest checkpoint of each namespace of a thread (the saver's prune, with its graph's channels). */
  pruneCheckpoints(threadId: string, graphId: string | undefined): Promise<void>;
  /** The long-term memory store the graphs get, served by the store routes; none: they answer 404. */
  store?: BaseStore;
  /** Deletes an ended run's checkpoints, then its record and events (the caller holds its thread). */
  deleteRun(run: RunRecord): Promise<void>;
  /**
   * Merges `metadata` into the thread's latest checkpoint's, in place (the caller holds the thread);
   * "no checkpoint" when the thread has none, "synced" (nothing written) when the saver syncs between
   * devices, whose server stores a checkpoint once: the patch would stay on this device.
   */
  patchStateMetadata(
    threadId: string,
    metadata: Record<string, unknown>,
  ): Promise<"patched" | "no checkpoint" | "synced">;
}

/** The thread a request's path names, or the 404 answered without one. */
export type ThreadOr404 = (c: Context) => Promise<ThreadRecord | Response>;
/** Adds routes of a thread to `app`. */
export type ThreadRoutes = (app: Hono, context: RouteContext, threadOr404: ThreadOr404) => void;

const STRATEGIES: readonly MultitaskStrategy[] = ["reject", "enqueue", "interrupt", "rollback"];
/** A run's statuses at the Agent Server (`timeout` too, which no local run has). */
const RUN_STATUSES = ["pending", "running", "error", "success", "timeout", "interrupted"] as const;
/** The fields runs.list's `select` names (the SDK's RunSelectField). */
const RUN_FIELDS = [
  "run_id",
  "thread_id",
  "assistant_id",
  "created_at",
  "updated_at",
  "status",
  "metadata",
  "kwargs",
  "multitask_strategy",
  "cancel_reason",
] as const;

/** Adds the run routes to `app`. */
export function registerRunRoutes(app: Hono, context: RouteContext, threadOr404: ThreadOr404): void {
  const { threads, runs } = context;

  /**
   * Starts the run a body describes, or answers why it cannot. `streamed`: the
   * answer lasts as long as the run (stream, wait), so `on_disconnect` applies.
   * `own`: a run without a thread (stateless-runs.ts), on this new one, and what is done once it has ended.
   */
  const startRun = async (c: Context, streamed: boolean, own?: OwnThread): Promise<RunHandle | Response> => {
    const json = await body(c);
    const threadId = own?.threadId ?? c.req.param("thread_id")!;
    const assistantId = optionalString(json, "assistant_id");
    // Required, as the Agent Server's schema has it: a body without one is answered 422, not "no graph".
    if (assistantId === undefined) {
      throw new BadRequest(`assistant_id is required: one of ${Object.keys(context.graphs).join(", ")}.`);
    }
    const graph = context.graphs[assistantId];
    if (!graph) {
      return reply(
        c,
        {
          error: `No graph named ${JSON.stringify(assistantId)}: createLocalAgentServer({ graphs }) has ${Object.keys(context.graphs).join(", ")}`,
        },
        404,
      );
    }
    // Every field checked before anything is written: bad input is answered 422 with the thread as it was.
    const ifNotExists = checkOneOf(
      optionalString(json, "if_not_exists") ?? "reject",
      ["reject", "create"],
      "if_not_exists",
    );
    const multitask = checkOneOf(
      optionalString(json, "multitask_strategy") ?? "reject",
      STRATEGIES,
      "multitask_strategy",
    );
    const requested = json.stream_mode;
    const asked: unknown[] = Array.isArray(requested) ? requested : requested == null ? [] : [requested];
    // None asked, an empty list too, is "values", as the Agent Server has it: useStream sends [] when the
    // component reads no streamed values (only `interrupt`, say), and still counts on the values events.
    const modes = (asked.length === 0 ? ["values"] : asked).map((mode) =>
      checkOneOf(String(mode), STREAM_MODES, "stream_mode"),
    );
    const commandJson = optionalObject(json, "command");
    const command = commandJson && commandOf(commandJson);
    const config = runConfigOf(json);
    const durability = durabilityOf(json);
    const interruptBefore = interruptNodesOf(json, "interrupt_before");
    const interruptAfter = interruptNodesOf(json, "interrupt_after");
    const checkpointId = optionalString(json, "checkpoint_id");
    const configurable = {
      ...config.configurable,
      ...optionalCheckpoint(json, "checkpoint"),
      ...(checkpointId ? { checkpoint_id: checkpointId } : {}),
      // Set by the server, as LangGraph's own keys are: refused in the client's configurable above.
      ...strictResumeOf(json),
      thread_id: threadId,
      // Both, as the Agent Server gives them (an assistant here is its graph, by name).
      graph_id: assistantId,
      assistant_id: assistantId,
    };
    const onDisconnect = checkOneOf(
      optionalString(json, "on_disconnect") ?? "continue",
      ["cancel", "continue"],
      "on_disconnect",
    );
    // A run the Agent Server would start later: refused rather than started at once.
    if ((optionalNumber(json, "after_seconds") ?? 0) > 0) {
      throw new BadRequest("after_seconds is not served by the local agent server: start the run when it is due.");
    }
    const metadata = optionalObject(json, "metadata") ?? {};
    const subgraphs = optionalBoolean(json, "stream_subgraphs") ?? false;

    if (own !== undefined || ifNotExists === "create") await threads.create(storableThreadId(threadId), {});
    else if ((await threadOr404(c)) instanceof Response) return reply(c, { error: "Thread not found" }, 404);
    // A delete or state update of this server holding the thread is not a run: waited for, not refused.
    if (multitask === "reject") await runs.idleHoldsDone(threadId);
    if (multitask === "reject" && (await isThreadRunning(threadId, { dbName: context.dbName, locks: context.locks }))) {
      return busy(c, threadId);
    }
    await threads.patch(threadId, { metadata: { graph_id: assistantId, assistant_id: assistantId } });
    const started = runs.start({
      threadId,
      assistantId,
      graph,
      input: command ?? json.input ?? null,
      config: {
        ...config,
        configurable,
        // The run's metadata where the graph (and LangChain's callbacks: the messages events) sees it, as the
        // Agent Server and LangGraph's embed server run it; LangGraph.js keeps it out of the checkpoints.
        metadata: { ...config.metadata, ...metadata },
        ...(json.context !== undefined ? { context: json.context } : {}),
        ...(interruptBefore !== undefined ? { interruptBefore } : {}),
        ...(interruptAfter !== undefined ? { interruptAfter } : {}),
        ...(durability !== undefined ? { durability } : {}),
      } as RunnableConfig,
      modes: modes as StreamMode[],
      subgraphs,
      multitask,
      metadata,
      ...(own ? { afterRun: own.afterRun } : {}),
    });
    let run: RunHandle;
    try {
      run = await started;
    } catch (error) {
      // Another run took the thread between the check above and this run's turn.
      if (error instanceof ThreadBusyError) return busy(c, threadId);
      throw error;
    }
    // `useStream` asks for "cancel" (unless its streams are resumable): its Stop leaves the
    // stream and counts on the server to stop the run.
    if (streamed && onDisconnect === "cancel") cancelOnLeave(c, run);
    return run;
  };
  /** Stops `run` when the client of `c` leaves (it may have left already: Stop right after Send). */
  const cancelOnLeave = (c: Context, run: RunHandle) => {
    const leave = () => void run.cancel("interrupt").catch(() => undefined);
    if (c.req.raw.signal.aborted) leave();
    else c.req.raw.signal.addEventListener("abort", leave, { once: true });
  };
  /** The record of `run` once it has ended, as the run log has it (the handle's may be older). */
  const finalRecord = (run: RunHandle) => async () =>
    (await runs.find(run.record.thread_id, run.record.run_id))?.record;
  const runOr404 = async (c: Context): Promise<RunHandle | Response> =>
    (await runs.find(c.req.param("thread_id")!, c.req.param("run_id")!)) ?? reply(c, { error: "Run not found" }, 404);
  /** The values of the state of the thread of `run`, now; `{}` without a thread or a graph. */
  const stateValues = async (run: RunRecord): Promise<unknown> => {
    const thread = await threads.get(run.thread_id);
    const graph = thread && context.graphs[run.assistant_id];
    const snapshot = graph ? await graph.getState({ configurable: { thread_id: run.thread_id } }) : undefined;
    return snapshot?.values ?? {};
  };
  /**
   * The run's answer once it ends (runs.wait, runs.join), with the headers naming it, as the Agent
   * Server's; without a values event, `fallback`'s (default: the thread's state then).
   */
  const finalValues = async (c: Context, run: RunHandle, fallback = () => stateValues(run.record)) => {
    for (const [name, value] of Object.entries(runHeaders(run.record, "join"))) c.header(name, value);
    let error: string | undefined;
    let values: string | undefined;
    for await (const event of run.follow()) {
      if (event.event === "error") error = event.data;
      else if (event.event === "values") values = event.data;
    }
    if (error !== undefined) return reply(c, { __error__: JSON.parse(error) as unknown });
    // The run's own last values, as the Agent Server answers: they carry `__interrupt__` when
    // the run paused, and they are this run's even if another ran on the thread since.
    if (values !== undefined) return c.body(values, 200, { "Content-Type": "application/json" });
    return reply(c, await fallback());
  };

  registerStatelessRunRoutes(app, context, { startRun, finalValues, stateValues });
  app.post("/threads/:thread_id/runs/stream", async (c) => {
    const run = await startRun(c, true);
    if (run instanceof Response) return run;
    return sse(withEnd(run.follow(), finalRecord(run)), runHeaders(run.record, "stream"));
  });
  app.post("/threads/:thread_id/runs", async (c) => {
    const run = await startRun(c, false);
    if (run instanceof Response) return run;
    c.header("Content-Location", runHeaders(run.record, "join")["Content-Location"]);
    return reply(c, run.record);
  });
  app.post("/threads/:thread_id/runs/wait", async (c) => {
    const run = await startRun(c, true);
    if (run instanceof Response) return run;
    return finalValues(c, run);
  });
  app.get("/threads/:thread_id/runs", async (c) => {
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const asked = c.req.query("status");
    const status = asked === undefined ? undefined : checkOneOf(asked, RUN_STATUSES, "status");
    const offset = Number(c.req.query("offset") ?? 0);
    const limit = Number(c.req.query("limit") ?? 10);
    if (!Number.isInteger(offset) || offset < 0 || !Number.isInteger(limit) || limit < 0) {
      throw new BadRequest("limit and offset must be non-negative integers.");
    }
    const select = (c.req.queries("select") ?? []).map((field) => checkOneOf(field, RUN_FIELDS, "select"));
    const listed = await runs.list(thread.thread_id);
    const matching = status === undefined ? listed : listed.filter((run) => run.status === status);
    const page = matching.slice(offset, offset + limit);
    // Only the fields select names, as the Agent Server answers (those a local run has: no kwargs).
    const picked = (run: RunRecord) =>
      Object.fromEntries(select.filter((f) => f in run).map((f) => [f, run[f as keyof RunRecord]]));
    return reply(c, select.length === 0 ? page : page.map(picked));
  });
  app.get("/threads/:thread_id/runs/:run_id", async (c) => {
    const run = await runOr404(c);
    return run instanceof Response ? run : reply(c, run.record);
  });
  app.get("/threads/:thread_id/runs/:run_id/join", async (c) => {
    const run = await runOr404(c);
    if (run instanceof Response) return run;
    await runs.eventsReadable();
    // runs.join's cancelOnDisconnect, as on a run's stream: the joining client's leaving stops the run.
    if (queryFlag(c, "cancel_on_disconnect")) cancelOnLeave(c, run);
    return finalValues(c, run);
  });
  app.get("/threads/:thread_id/runs/:run_id/stream", async (c) => {
    const run = await runOr404(c);
    if (run instanceof Response) return run;
    const lastEventId = Number(c.req.header("Last-Event-ID") ?? -1);
    const modes = (c.req.queries("stream_mode") ?? []).map((mode) => checkOneOf(mode, STREAM_MODES, "stream_mode"));
    await runs.eventsReadable();
    // As the Agent Server serves it: the joining client's leaving stops the run.
    if (queryFlag(c, "cancel_on_disconnect")) cancelOnLeave(c, run);
    const events = run.follow(Number.isInteger(lastEventId) ? lastEventId : -1);
    const sent = modes.length === 0 ? events : onlyModes(events, modes);
    return sse(withEnd(sent, finalRecord(run)), runHeaders(run.record, "stream"));
  });
  // As the Agent Server's Runs.delete: the record goes with the run's checkpoints (as a rollback
  // deletes them), holding the thread, so no run builds on them meanwhile. A run not ended is
  // refused: deleted under it, it would go on writing checkpoints and its record back.
  app.delete("/threads/:thread_id/runs/:run_id", async (c) => {
    const run = await runOr404(c);
    if (run instanceof Response) return run;
    const { record } = run;
    if (!isFinal(record)) {
      const error = `Run ${record.run_id} is ${record.status}: cancel it (runs.cancel with wait) before deleting it`;
      return reply(c, { error }, 409);
    }
    // Its final record may still be on its way to the run log: the run's end, then the delete.
    for await (const _ of run.follow(Number.MAX_SAFE_INTEGER));
    const graph = context.graphs[record.assistant_id];
    const readState = () => graph?.getState({ configurable: { thread_id: record.thread_id } }).catch(() => undefined);
    try {
      const status = await runs.whileIdle(record.thread_id, async () => {
        const head = await readState();
        await context.deleteRun(record);
        // Its checkpoint was the thread's last: the status is the state's now (a pause or a failure of
        // this run goes with it), as the run that left that state set it.
        if (runIdOf(head) !== record.run_id) return undefined;
        const state = await readState();
        if (!state || state.next.length === 0) return "idle";
        if (state.tasks.some((task) => task.interrupts.length > 0)) return "interrupted";
        // A task left without an interrupt: a static breakpoint's pause, unless the run that left it
        // was stopped (a cancel, useStream's Stop: its thread was idle) or failed.
        const left = runIdOf(state);
        const by = left === undefined ? undefined : (await runs.find(record.thread_id, left))?.record.status;
        return by === "interrupted" ? "idle" : by === "error" ? "error" : "interrupted";
      });
      if (status) await threads.patch(record.thread_id, { status });
    } catch (error) {
      if (error instanceof ThreadBusyError) return busy(c, record.thread_id);
      throw error;
    }
    return c.body(null, 204);
  });
  app.post("/threads/:thread_id/runs/:run_id/cancel", async (c) => {
    const run = await runOr404(c);
    if (run instanceof Response) return run;
    const action = checkOneOf(c.req.query("action") ?? "interrupt", ["interrupt", "rollback"], "action");
    // The SDK's `reason` ("taken", for steering) is not recorded: a local run's record has no cancel_reason.
    // The cancel itself is made: refusing it left running a run the app asked to stop.
    const cancelled = run.cancel(action);
    const wait = queryFlag(c, "wait");
    if (wait) await cancelled;
    else cancelled.catch(() => undefined);
    // As the Agent Server: 204 once the run has ended, 202 when the cancel is only under way.
    return c.body(null, wait ? 204 : 202);
  });
}

/** The run that wrote a state's checkpoint (its metadata's `run_id`), if one did. */
function runIdOf(state: { metadata?: unknown } | undefined): string | undefined {
  const runId = (state?.metadata as { run_id?: unknown } | undefined)?.run_id;
  return typeof runId === "string" ? runId : undefined;
}

/**
 * The LangGraph `Command` of a request's `command`, as the Agent Server makes
 * it (`getLangGraphCommand`): `goto` a node name, a Send in the SDK's shape
 * (`{ node, input }`), or a list of them, each Send made a LangGraph `Send`
 * (helper-57: passed as a plain object, LangGraph failed the run).
 * Anything else in `goto` is refused before anything runs.
 */
function commandOf(command: Record<string, unknown>): Command {
  const { goto, update, resume } = command;
  const targets = goto === undefined || goto === null ? [] : Array.isArray(goto) ? goto : [goto];
  const sends = targets.map((target: unknown) => {
    if (typeof target === "string") return target;
    const { node, input } = (target ?? {}) as { node?: unknown; input?: unknown };
    if (typeof target === "object" && target !== null && typeof node === "string") return new Send(node, input);
    throw new BadRequest(
      `command.goto must be a node name, a Send ({ node, input }) or a list of them; got ${JSON.stringify(goto)}.`,
    );
  });
  // `update` as the client sent it: channel values, or a list of [channel, value] pairs.
  const updates = update as Record<string, unknown> | [string, unknown][] | undefined;
  return new Command({ ...(sends.length > 0 ? { goto: sends } : {}), update: updates, resume });
}
