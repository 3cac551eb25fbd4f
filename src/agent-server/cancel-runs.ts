/**
 * `runs.cancelMany` (POST /runs/cancel): the runs named on a thread, or every
 * thread's runs of a status, each cancelled as one `runs.cancel` cancels it
 * (this server's, or another tab's through the run channel).
 */
import type { Hono } from "hono";
import { isStringList } from "../core/guards.js";
import { BadRequest, body, checkOneOf, optionalString } from "./input.js";
import { reply } from "./replies.js";
import type { RunHandle } from "./run-handles.js";
import type { RouteContext } from "./run-routes.js";

/** The statuses `runs.cancelMany` takes (the SDK's BulkCancelRunsStatus). */
const CANCEL_STATUSES = ["pending", "running", "all"] as const;

/**
 * The most run ids one `runs.cancelMany` takes. Each id is looked up at once (a read of the run
 * log, and a Web Lock query for another tab's run), all before any is cancelled, so an uncapped
 * list is that many reads held open together; 1,000 is far more than one thread has runs going or
 * waiting (one runs, the rest wait in turn), and the page size the sync protocol caps its lists at.
 */
export const MAX_CANCEL_RUN_IDS = 1_000;

/** Adds POST /runs/cancel to `app`. */
export function registerCancelRunsRoute(app: Hono, context: RouteContext): void {
  app.post("/runs/cancel", async (c) => {
    const json = await body(c);
    const action = checkOneOf(c.req.query("action") ?? "interrupt", ["interrupt", "rollback"], "action");
    const asked = optionalString(json, "status");
    const threadId = optionalString(json, "thread_id");
    const runIds = json.run_ids ?? undefined;
    let runs: RunHandle[];
    if (asked !== undefined) {
      const status = checkOneOf(asked, CANCEL_STATUSES, "status");
      // As the Agent Server's: a status cancels runs of every thread, so ids with it are a mistake, not a filter.
      if (threadId !== undefined || runIds !== undefined) {
        throw new BadRequest("status cancels the runs of every thread: give it alone, or thread_id and run_ids.");
      }
      runs = (await context.runs.unfinished()).filter((run) => status === "all" || run.record.status === status);
    } else {
      if (threadId === undefined || runIds === undefined) {
        throw new BadRequest("Give a status (pending, running, all), or both thread_id and run_ids.");
      }
      if (!isStringList(runIds))
        throw new BadRequest(`run_ids must be a list of run ids; got ${JSON.stringify(runIds)}.`);
      if (runIds.length > MAX_CANCEL_RUN_IDS) {
        throw new BadRequest(
          `run_ids takes at most ${MAX_CANCEL_RUN_IDS} run ids; got ${runIds.length}: cancel them in several requests.`,
        );
      }
      const found = await Promise.all(runIds.map((runId) => context.runs.find(threadId, runId)));
      // As the Agent Server answers a run it does not find on the thread; here before any run is cancelled.
      if (found.some((run) => run === undefined)) return reply(c, { error: "Run not found" }, 404);
      runs = found as RunHandle[];
    }
    // 204 once they have ended, so a list read next shows them so; a frozen tab's run is waited for a while
    // only, and then answered 202 as runs.cancel answers a cancel under way: 204 would say it had ended.
    const ended = await context.runs.cancelRuns(runs, action);
    return c.body(null, ended ? 204 : 202);
  });
}
