/**
 * Following a run that another local agent server runs (another tab or
 * worker, or this tab before a reload): its record and stored events come
 * from the run log; while its runner lives (it holds the run's Web Lock), the
 * events come from the runner over the agent-run channel, first every event
 * after the one asked for, then each new one. A run whose runner is gone
 * (the lock is free) but whose record is not final was cut short: its tab
 * closed or crashed. It is reported so (status "error", an error event after
 * its stored events), never as running forever.
 */
import type { RunLockManager } from "../runs/locks.js";
import { crossTabName } from "../core/channel.js";
import type { AgentRunChannel } from "./run-channel.js";
import { isFinal, type RunLog } from "./run-log.js";
import type { RunRecord, SentEvent } from "./records.js";
import { errorData, toJsonText } from "./stream.js";

/** How often a follower asks again while the runner has not answered, and checks it still lives. */
const ASK_MS = 200;
/** How often a follower that has its answer checks the runner still lives. */
const ALIVE_MS = 1_000;

/** What following another server's run needs. */
export interface RemoteContext {
  dbName: string;
  log: RunLog;
  channel: AgentRunChannel;
  locks: RunLockManager;
  /** Told once of a run found cut short, with its record now final. */
  lost(record: RunRecord): Promise<void>;
}

/** The lock the server running `runId` holds until the run's record is final. */
export function runnerLockName(dbName: string, runId: string): string {
  return crossTabName({ kind: "agent-run", dbName, runId });
}

/** The error a run cut short ends with. */
export class RunLostError extends Error {
  override name = "RunLostError";
  constructor(runId: string) {
    super(`Run ${runId} was cut short: the tab or worker running it closed or crashed before it ended.`);
  }
}

/**
 * The error a replay ends a failed run with when its own error event cannot
 * be told: stored, but sealed under a data key `rekey` or `changeKey` has
 * since retired (or edited on disk), or pruned with the run's other events
 * (`keepRunEvents`). The run's record, kept in clear, still says it failed.
 */
export class RunFailedError extends Error {
  override name = "RunFailedError";
  constructor(runId: string, why: "sealed" | "pruned") {
    const reason =
      why === "sealed"
        ? "its event is sealed under a data key since retired (rekey, changeKey), or was edited."
        : "its events were pruned (keepRunEvents).";
    super(`Run ${runId} failed (its record says "error"), but its error is not shown: ${reason}`);
  }
}

async function runnerAlive(context: RemoteContext, runId: string): Promise<boolean> {
  const { held } = await context.locks.query();
  return held.includes(runnerLockName(context.dbName, runId));
}

/**
 * The run's record as it stands: a record that is not final while no one
 * runs it is made final ("error") and reported through `lost`.
 */
export async function remoteRecord(context: RemoteContext, runId: string): Promise<RunRecord | undefined> {
  const record = await context.log.get(runId);
  if (!record || isFinal(record) || (await runnerAlive(context, runId))) return record;
  return settleLost(context, runId);
}

async function settleLost(context: RemoteContext, runId: string): Promise<RunRecord | undefined> {
  // The runner writes its final record before it releases the lock: read again.
  const record = await context.log.get(runId);
  if (!record || isFinal(record)) return record;
  const settled = await context.log.settle({ ...record, status: "error", updated_at: new Date().toISOString() });
  if (settled.status === "error" && !isFinal(record)) await context.lost(settled);
  return settled;
}

/** The run's events after `afterId`, then each as it comes, until it ends (or is found cut short). */
export async function* followRemote(context: RemoteContext, runId: string, afterId: number): AsyncGenerator<SentEvent> {
  let last = afterId;
  const stored = await context.log.get(runId);
  if (stored && !isFinal(stored)) {
    for await (const event of fromRunner(context, runId, afterId)) {
      last = event.id;
      yield event;
    }
  }
  const record = await settleLost(context, runId);
  const { events, lastId, errorLeftOut } = await context.log.stored(runId);
  for (const event of events) if (event.id > last) yield event;
  if (record?.status !== "error" || events.some((event) => event.event === "error")) return;
  // A failed run stored its error event, one cut short none. The event left out (it no longer opens), or
  // every event pruned, the record still says the run failed: said so, never taken for a run cut short.
  const error =
    errorLeftOut !== undefined
      ? new RunFailedError(runId, "sealed")
      : lastId < 0
        ? new RunFailedError(runId, "pruned")
        : new RunLostError(runId);
  // In the place of the event it stands for, or after every row: a Last-Event-ID past it skips it.
  const id = errorLeftOut ?? Math.max(last, lastId) + 1;
  if (id > afterId) yield { id, event: "error", data: toJsonText(errorData(error)) };
}

/** Events from the live runner, until it says the run has ended or it is found gone. */
async function* fromRunner(context: RemoteContext, runId: string, afterId: number): AsyncGenerator<SentEvent> {
  const { channel } = context;
  const queue: SentEvent[] = [];
  let queued = afterId;
  let answered = false;
  let finished = false;
  let wake: (() => void) | undefined;
  const off = channel.listen((message) => {
    if (message.type !== "events" || message.runId !== runId) return;
    if (message.to !== undefined ? message.to !== channel.id : !answered) return;
    if (message.to !== undefined) answered = true;
    for (const event of message.events) {
      if (event.id > queued) {
        queue.push(event);
        queued = event.id;
      }
    }
    finished ||= message.finished;
    wake?.();
  });
  try {
    for (;;) {
      // Asked again until answered: the runner may not listen yet, or may be gone.
      if (!answered) channel.post({ type: "replay", runId, after: afterId, from: channel.id });
      while (queue.length > 0) yield queue.shift()!;
      if (finished) return;
      const woken = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), answered ? ALIVE_MS : ASK_MS);
        wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
      });
      wake = undefined;
      if (!woken && !(await runnerAlive(context, runId))) {
        while (queue.length > 0) yield queue.shift()!;
        return;
      }
    }
  } finally {
    off();
  }
}
