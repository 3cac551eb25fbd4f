/**
 * `threads.patchState` (PATCH /threads/:id/state): the metadata given is
 * merged into the metadata of the thread's latest checkpoint, in place (its
 * checkpoint keeps its id, values, parent and pending writes: the history
 * gains no state). LangGraph's JS API server (1.5.1) does not serve the
 * route; its schema (`ThreadStatePatch`) is the same body, `{ metadata }`.
 * On a saver that syncs between devices it is refused (409), nothing
 * written: the sync server stores a checkpoint once, so the patch would
 * reach no other device (docs/sync.md).
 */
import { ThreadBusyError } from "../runs/errors.js";
import { busy, reply } from "./replies.js";
import { BadRequest, body, optionalObject } from "./input.js";
import type { ThreadRoutes } from "./run-routes.js";

/** Metadata keys a patch may not change (see the route). */
const KEPT_KEYS = ["step", "parents", "run_id"] as const;

/** Why a patch on a saver that syncs between devices is refused, and what to do instead. */
const synced = (threadId: string) =>
  `Thread ${threadId}'s checkpoints are synced between devices (its saver is given to a SyncClient, or its ` +
  "database has synced), and the sync server stores a checkpoint once: metadata patched in place would stay on " +
  "this device, unseen by the others. Nothing was patched. Keep what the other devices must see in the state " +
  "(threads.updateState writes a new checkpoint, which syncs), or patch on a saver that does not sync.";

/** Adds PATCH /threads/:thread_id/state to `app`. */
export const registerStatePatchRoute: ThreadRoutes = (app, context, threadOr404) => {
  app.patch("/threads/:thread_id/state", async (c) => {
    // Checked before the thread is read: bad input is answered 422 whatever the thread.
    const metadata = optionalObject(await body(c), "metadata");
    if (metadata === undefined) {
      throw new BadRequest("metadata is required: an object of the keys to merge into the state's metadata.");
    }
    // Keys the checkpoint is read by: LangGraph derives its tasks' ids from `step` (a waiting interrupt's
    // answer would no longer find its task) and its subgraphs' from `parents`; a rollback and runs.delete
    // find a run's checkpoints by `run_id`.
    for (const key of KEPT_KEYS) {
      if (Object.hasOwn(metadata, key)) {
        throw new BadRequest(
          `metadata.${key} is read by LangGraph or this server to find the checkpoint's tasks or run, and is not patched.`,
        );
      }
    }
    const thread = await threadOr404(c);
    if (thread instanceof Response) return thread;
    const threadId = thread.thread_id;
    try {
      // Under the thread's run lock, as an update of the state: a run going writes its next checkpoint
      // over "the latest", so the patch would land on a checkpoint already passed (409, as an update).
      const patched = await context.runs.whileIdle(threadId, async () => {
        // Deleted since it was read above: nothing is written onto a thread gone.
        if (!(await context.threads.get(threadId))) return "no thread";
        return context.patchStateMetadata(threadId, metadata);
      });
      if (patched === "patched") return c.body(null, 204);
      if (patched === "synced") return reply(c, { error: synced(threadId) }, 409);
      const error = patched === "no thread" ? "Thread not found" : `Thread ${threadId} has no state to patch yet`;
      return reply(c, { error }, 404);
    } catch (error) {
      if (error instanceof ThreadBusyError) return busy(c, threadId);
      throw error;
    }
  });
};
