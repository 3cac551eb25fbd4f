/**
 * `threads.prune` (POST /threads/prune), as the Agent Server serves it:
 * `"delete"` deletes whole threads, `"keep_latest"` keeps each thread and its
 * latest state and drops its older checkpoints; the answer counts the
 * threads pruned.
 */
import type { Hono } from "hono";
import { ThreadBusyError } from "../runs/errors.js";
import { isStringList } from "../core/guards.js";
import { reply } from "./replies.js";
import { BadRequest, body, checkOneOf, optionalString } from "./input.js";
import type { RouteContext } from "./run-routes.js";

/** Adds POST /threads/prune to `app`. */
export function registerPruneRoute(app: Hono, context: RouteContext): void {
  const { threads } = context;
  app.post("/threads/prune", async (c) => {
    const json = await body(c);
    const threadIds = json.thread_ids;
    // Checked whole before anything is deleted: a bad id halfway would leave the list half pruned.
    if (!isStringList(threadIds)) {
      throw new BadRequest(`thread_ids must be a list of thread ids; got ${JSON.stringify(threadIds)}.`);
    }
    const strategy = checkOneOf(optionalString(json, "strategy") ?? "delete", ["delete", "keep_latest"], "strategy");
    let pruned = 0;
    for (const threadId of new Set(threadIds)) {
      // A thread without a record is none of this server's: not counted, as the Agent Server counts.
      const thread = await threads.get(threadId);
      if (!thread) continue;
      if (strategy === "delete") {
        // As threads.delete: its runs stopped first, then checkpoints, runs and record, under its lock.
        await context.deleteThread(threadId);
        pruned++;
        continue;
      }
      try {
        // Under the thread's run lock: a run going would write its next checkpoint onto a parent pruned
        // from under it. A thread a run holds is left as it is, and not counted.
        const done = await context.runs.whileIdle(threadId, async () => {
          const now = await threads.get(threadId);
          if (!now) return false;
          const graphId = now.metadata.graph_id;
          await context.pruneCheckpoints(threadId, typeof graphId === "string" ? graphId : undefined);
          return true;
        });
        if (done) pruned++;
      } catch (error) {
        if (!(error instanceof ThreadBusyError)) throw error;
      }
    }
    return reply(c, { pruned_count: pruned });
  });
}
