/**
 * Runs without a thread (POST /runs/stream, /runs/wait, /runs: the SDK's
 * `runs.stream(null, ...)` and the like). As the Agent Server runs them: on a
 * thread of their own, made for the run, which goes once the run has ended
 * (`on_completion` "delete", the default) or stays ("keep"). The answers name
 * the run on its thread (Content-Location, Location), so a client can join it
 * or resume its stream while the thread is there.
 */
import type { Context, Hono } from "hono";
import type { RunRecord } from "./records.js";
import type { RunHandle } from "./run-handles.js";
import { body } from "./input.js";
import { onCompletionOf } from "./run-options.js";
import { reply } from "./replies.js";
import { runHeaders, sse, withEnd } from "./run-replies.js";

/** What of the server these routes use: how a thread is deleted (RouteContext's). */
export interface StatelessContext {
  deleteThread(threadId: string): Promise<void>;
  /**
   * Records the thread as a leftover in the server's database, before its first delete: a server
   * closed before a delete succeeds (a reload) leaves it to the next one to start.
   */
  recordLeftover(threadId: string): Promise<void>;
  /** Deletes the thread again later, until a delete succeeds (a run's own thread whose delete failed). */
  deleteThreadLater(threadId: string): void;
}

/** A thread-less run's own thread, and what is done once the run has ended (RunSpec's `afterRun`). */
export interface OwnThread {
  threadId: string;
  afterRun(record: RunRecord | undefined): Promise<void>;
}

/** What the run routes lend these: how a run starts, and how its end is answered. */
export interface RunStarter {
  /** Starts the run the body of `c` describes on its own new thread, or answers why it cannot. */
  startRun(c: Context, streamed: boolean, own: OwnThread): Promise<RunHandle | Response>;
  /** The run's answer once it ends, as runs.wait answers; without a values event, `fallback`'s. */
  finalValues(c: Context, run: RunHandle, fallback?: () => Promise<unknown>): Promise<Response>;
  /** The values of the state of the run's thread, now. */
  stateValues(run: RunRecord): Promise<unknown>;
}

/** Adds the routes of runs without a thread to `app`. */
export function registerStatelessRunRoutes(app: Hono, context: StatelessContext, starter: RunStarter): void {
  /**
   * Starts the run on a thread of its own; `ended` resolves once the run has
   * ended and, with "delete", its thread is gone, with the run's final record
   * (taken before the thread goes with it; none when the run was rolled back:
   * deleted, as a thread's run rolled back is). A thread whose delete fails
   * is deleted again later, and the run ends with status `error` saying so.
   * `waited`: a wait, which answers the run's final state when it sent no
   * values event; with "delete", `stateBefore` has it, read before the thread went.
   */
  const start = async (c: Context, streamed: boolean, waited = false) => {
    // Checked before anything is written, as the run's other fields are.
    const onCompletion = onCompletionOf(await body(c));
    let final: RunRecord | undefined;
    let finalState: unknown = {};
    const threadId = crypto.randomUUID();
    // Run by the registry before anyone following the run is told it ended: a join, here or in another
    // tab, answers once the thread is gone (it answered first, and a list right after still had the thread).
    const afterRun = async (record: RunRecord | undefined) => {
      final = record;
      if (onCompletion !== "delete") return;
      // A state LangGraph cannot read (a run that failed on its input) is answered by its error event instead.
      if (waited && record) finalState = await starter.stateValues(record).catch(() => ({}));
      try {
        await context.recordLeftover(threadId);
        await context.deleteThread(threadId);
      } catch (error) {
        // The registry reports the rejection on the run (an error event, status "error"), and so does its end.
        if (final) final = { ...final, status: "error" };
        context.deleteThreadLater(threadId);
        const reason = error instanceof Error ? error.message : String(error);
        throw new Error(
          `The run's own thread ${threadId} could not be deleted (on_completion "delete"): ${reason}. It is deleted again later.`,
          { cause: error },
        );
      }
    };
    const run = await starter.startRun(c, streamed, { threadId, afterRun });
    if (run instanceof Response) return run;
    const ended = (async (): Promise<RunRecord | undefined> => {
      for await (const _ of run.follow(Number.MAX_SAFE_INTEGER));
      return final;
    })();
    // With "keep" none: the thread is there, and its state answers, as a thread's wait's does.
    const stateBefore = onCompletion === "delete" ? async () => finalState : undefined;
    return { run, ended, stateBefore };
  };

  app.post("/runs/stream", async (c) => {
    const started = await start(c, true);
    if (started instanceof Response) return started;
    const { run, ended } = started;
    // The stream's end once the thread is gone: a client that reads it finds nothing left behind.
    return sse(
      withEnd(run.follow(), () => ended),
      runHeaders(run.record, "stream"),
    );
  });
  app.post("/runs/wait", async (c) => {
    const started = await start(c, true, true);
    if (started instanceof Response) return started;
    const answer = await starter.finalValues(c, started.run, started.stateBefore);
    await started.ended;
    return answer;
  });
  app.post("/runs", async (c) => {
    const started = await start(c, false);
    if (started instanceof Response) return started;
    c.header("Content-Location", runHeaders(started.run.record, "join")["Content-Location"]);
    return reply(c, started.run.record);
  });
}
