/**
 * `threads.joinStream` (GET /threads/:id/stream): a thread's own stream, the
 * events of each of its runs in turn (any tab's: read through the registry,
 * which follows another server's run over the channel), open until the
 * client leaves or the thread is deleted. Event ids are `<run_id>:<n>` (the
 * run's own event number), so a `Last-Event-ID` resumes inside a run and
 * then goes on with the runs after it. Mode `run_modes` only: each run's
 * events as its own stream sent them.
 */
import { pause } from "../core/tasks.js";
import { isFinal } from "./run-log.js";
import { sse } from "./run-replies.js";
import { BadRequest, checkOneOf } from "./input.js";
import type { RouteContext, ThreadRoutes } from "./run-routes.js";
import type { RunRecord, SentEvent } from "./records.js";

/** The SDK's ThreadStreamMode. */
const THREAD_STREAM_MODES = ["run_modes", "lifecycle", "state_update"] as const;
/**
 * How often an open stream with no run to follow looks for a new one all the same: it is woken by the
 * notice of a run recorded (or of the thread deleted) in any tab (RunRegistry.onThreadChange); this
 * look is for a notice missed (a tab of a build that sends none).
 */
const LOOK_EVERY_MS = 5_000;

/** Where a resumed stream goes on: after event `after` of run `runId`. */
interface ResumeAt {
  runId: string;
  after: number;
}

/** Adds GET /threads/:thread_id/stream to `app`. */
export const registerThreadStreamRoute: ThreadRoutes = (app, context, threadOr404) => {
  app.get("/threads/:thread_id/stream", async (c) => {
    const modes = (c.req.queries("stream_mode") ?? []).map((mode) =>
      checkOneOf(mode, THREAD_STREAM_MODES, "stream_mode"),
    );
    // Their event shapes are the Agent Server's own, which no public code shows: refused, not guessed.
    const other = modes.find((mode) => mode !== "run_modes");
    if (other !== undefined) {
      throw new BadRequest(`stream_mode ${other} is not served by the local agent server: run_modes only.`);
    }
    const lastEventId = c.req.header("Last-Event-ID");
    const from = lastEventId === undefined ? undefined : resumeAt(lastEventId);
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    await context.runs.eventsReadable();
    const stop = new AbortController();
    // A client that leaves (the body cancelled, or the request aborted) ends the stream's wait for runs,
    // and so does the server closing (its runs are cancelled: the one followed ends too). Each wait
    // listens to the three itself: a signal combined over the server's `closed` (AbortSignal.any) would
    // stay one of its dependants for the server's life in Node 20, one per stream.
    const stops = [stop.signal, c.req.raw.signal, context.closed];
    return sse(threadEvents(context, thread.thread_id, from, stops), {}, () => stop.abort());
  });
};

/**
 * A `Last-Event-ID` of this stream (`<run_id>:<n>`).
 * @throws {BadRequest} any other.
 */
function resumeAt(lastEventId: string): ResumeAt {
  const at = lastEventId.lastIndexOf(":");
  const after = Number(lastEventId.slice(at + 1));
  if (at <= 0 || !Number.isInteger(after) || after < -1) {
    throw new BadRequest(
      `Last-Event-ID must be an id this thread's stream sent (<run_id>:<n>); got ${JSON.stringify(lastEventId)}.`,
    );
  }
  return { runId: lastEventId.slice(0, at), after };
}

/**
 * The thread's runs' events, run after run, oldest first: from `from`, or
 * (without one, or when its run is gone) from the runs not ended yet, then
 * each run after them, until one of `stops` aborts or the thread is deleted.
 */
async function* threadEvents(
  context: RouteContext,
  threadId: string,
  from: ResumeAt | undefined,
  stops: readonly AbortSignal[],
): AsyncGenerator<Omit<SentEvent, "id"> & { id: string }> {
  const listed = (await context.runs.list(threadId)).reverse(); // oldest first
  const index = from === undefined ? -1 : listed.findIndex((run) => run.run_id === from.runId);
  // Runs the client has had: those before its run, or, with no run to resume, those already ended.
  const done = new Set(
    (index >= 0 ? listed.slice(0, index) : listed.filter(isFinal)).map((run: RunRecord) => run.run_id),
  );
  while (!stops.some((stop) => stop.aborted)) {
    const next = await nextRun(context, threadId, done, stops);
    if (next === "gone") return;
    if (next === undefined) continue;
    done.add(next.run_id);
    const run = await context.runs.find(threadId, next.run_id);
    if (!run) continue;
    const events = run.follow(index >= 0 && next.run_id === from?.runId ? from.after : -1);
    try {
      for await (const event of events) yield { ...event, id: `${next.run_id}:${event.id}` };
    } finally {
      await events.return(undefined);
    }
  }
}

/**
 * One look for a run of the thread not in `done`: "gone" once the thread is
 * deleted; with none, waits for a run's notice (or the slow look, or `stops`)
 * and answers undefined. Listening only meanwhile, before the look (a notice
 * that comes while it reads is not waited for): a stream held at an event its
 * client never reads (one that left without cancelling the body) holds no
 * listener on the registry.
 */
async function nextRun(
  context: RouteContext,
  threadId: string,
  done: ReadonlySet<string>,
  stops: readonly AbortSignal[],
): Promise<RunRecord | "gone" | undefined> {
  const noticed = new AbortController();
  const off = context.runs.onThreadChange(threadId, () => noticed.abort());
  try {
    if (!(await context.threads.get(threadId))) return "gone";
    // Only the runs it has not had are read: a long thread's ended runs are not read again at each look.
    // Newest first: the last is the oldest it has not had.
    const next = (await context.runs.list(threadId, done)).at(-1);
    // Listening to each signal only while it waits: a new AbortSignal.any over the stream's signals at each
    // wait stayed their dependant in Node 20 (20,000 waits: 20,000 dependants, 2 MB, after gc).
    if (next === undefined) await pause(LOOK_EVERY_MS, ...stops, noticed.signal);
    return next;
  } finally {
    off();
  }
}
