/**
 * The push half of a round: local changes the server lacks go out in
 * bounded batches (deletes with the first), each recorded as known to the
 * server once it answered. A thread the server refuses (a 400 or a 413
 * about its rows) does not stop the others: the refused batch is sent again
 * one thread at a time, and the threads refused alone are skipped for this
 * round, each with the reason.
 */
import { checkpointIdentity } from "../core/identity.js";
import type { SaverRawAccess } from "../saver/raw-access.js";
import {
  SYNC_PROTOCOL_VERSION,
  type PushRequest,
  type WireCheckpoint,
  type WireDelete,
  type WireRemoved,
} from "./protocol.js";
import { specialDigests } from "./push.js";
import { recordPushed, type ThreadSyncUpdate } from "./state.js";
import { SyncError, type SyncTransport } from "./transport.js";

/** A thread left out of a round, and why (for the status line). */
export interface SkippedThread {
  threadId: string;
  /** `invalid_id`: an id the server cannot store exactly; `refused`: the server refused its rows. */
  code: "invalid_id" | "refused";
  /** What the client or the server said about it (for developers). */
  reason: string;
  /** A sentence an app can show. */
  message: string;
}

/** A skipped thread's entry, with the sentence for its code. */
export function skippedThread(threadId: string, code: SkippedThread["code"], reason: string): SkippedThread {
  const message =
    code === "invalid_id"
      ? "This conversation's id holds characters the sync server cannot store, so it stays on this device."
      : "The sync server refused this conversation (too large, or not valid for it), so it stays on this device.";
  return { threadId, code, reason, message };
}

/** Local changes the server lacks. */
export interface PendingChanges {
  deletes: WireDelete[];
  /** Checkpoints removed here (prune, deleteForRuns) that the server holds. */
  removed: WireRemoved[];
  checkpoints: WireCheckpoint[];
  fps: Map<WireCheckpoint, string>;
  /** Threads among `checkpoints` with a checkpoint prune gave a snapshot (revalued): sent before any removal. */
  revaluedThreads: Set<string>;
  /** Threads that cannot be sent at all (ids the protocol refuses, stored before the saver refused them). */
  skipped: SkippedThread[];
}

/** What sending needs. */
export interface SendContext {
  access: SaverRawAccess;
  transport: SyncTransport;
  scope: string;
  device: string;
  batchSize: number;
  batchBytes: number;
  /** Called after every batch with what was sent so far. */
  onSent: (checkpoints: number, deletes: number) => void;
}

/** Codes of refusals about the rows of a request (not the user, the token or the server's state). */
const ROW_REFUSALS = new Set(["bad_request", "too_large", "checkpoint_too_large"]);

/** True when `error` is the server refusing what a request carried, so another thread may still go through. */
function refusedRows(error: unknown): error is SyncError {
  return error instanceof SyncError && (error.status === 400 || error.status === 413) && ROW_REFUSALS.has(error.code);
}

/** Bytes of values a bundle carries. */
function bundleBytes(c: WireCheckpoint): number {
  let n = c.checkpoint[1].length + c.metadata[1].length;
  for (const blob of c.blobs) n += blob.value[1].length;
  for (const write of c.writes) n += write.value[1].length;
  return n;
}

/**
 * Pushes `pending` and records each accepted batch. Resolves to the threads
 * skipped (those of `pending.skipped` and those the server refused).
 */
export async function sendPending(ctx: SendContext, pending: PendingChanges): Promise<SkippedThread[]> {
  const skipped = new Map(pending.skipped.map((s) => [s.threadId, s]));
  const send = async (checkpoints: WireCheckpoint[], deletes: WireDelete[], removed: WireRemoved[]): Promise<void> => {
    const request: PushRequest = { v: SYNC_PROTOCOL_VERSION, device: ctx.device, checkpoints, deletes };
    if (removed.length > 0) request.removed = removed;
    const answer = await ctx.transport.push(request);
    const updates: ThreadSyncUpdate[] = deletes.map((d) => ({ threadId: d.thread_id, tomb: d.max_deleted_id }));
    // A server that predates removals does not count them: they go again next round.
    if (answer.removed !== undefined)
      for (const r of removed)
        updates.push({ threadId: r.thread_id, gone: [checkpointIdentity(r.checkpoint_ns, r.checkpoint_id)] });
    for (const c of checkpoints) {
      const key = checkpointIdentity(c.checkpoint_ns, c.checkpoint_id);
      updates.push({
        threadId: c.thread_id,
        fps: [[key, pending.fps.get(c)!]],
        seen: [[key, specialDigests(c.writes)]],
      });
    }
    await recordPushed(ctx.access, ctx.scope, updates);
    ctx.onSent(checkpoints.length, deletes.length + removed.length);
  };
  /** Sends `queue` in batches, `deletes` and `removed` with the first, before any checkpoint. */
  const sendAll = async (queue: WireCheckpoint[], deletes: WireDelete[], removed: WireRemoved[]): Promise<void> => {
    let index = 0;
    while (deletes.length > 0 || removed.length > 0 || index < queue.length) {
      const batch: WireCheckpoint[] = [];
      let bytes = 0;
      while (index < queue.length && batch.length < ctx.batchSize) {
        const next = queue[index]!;
        const size = bundleBytes(next);
        if (batch.length > 0 && bytes + size > ctx.batchBytes) break;
        index += 1;
        if (skipped.has(next.thread_id)) continue;
        batch.push(next);
        bytes += size;
      }
      if (batch.length === 0 && deletes.length === 0 && removed.length === 0) continue;
      try {
        await send(batch, deletes, removed);
      } catch (error) {
        if (!refusedRows(error)) throw error;
        // One thread at a time: the refused ones are skipped, the others go through.
        const threads = new Set([...deletes, ...removed, ...batch].map((change) => change.thread_id));
        for (const threadId of threads) {
          const mine = <T extends { thread_id: string }>(list: T[]) => list.filter((c) => c.thread_id === threadId);
          try {
            await send(mine(batch), mine(deletes), mine(removed));
          } catch (alone) {
            if (!refusedRows(alone)) throw alone;
            skipped.set(threadId, skippedThread(threadId, "refused", alone.message));
          }
        }
      }
      deletes = [];
      removed = [];
    }
  };
  // A prune's snapshot stands in for the history its removals delete: the server must log it first, or a
  // device could pull the removals without it (a round or a pull cut between them, the snapshot refused)
  // and read the thread empty. So the threads with a revalued checkpoint send their checkpoints first, in
  // requests of their own, and their removals only once those were taken (a thread refused keeps them).
  const revalued = (c: { thread_id: string }) => pending.revaluedThreads.has(c.thread_id);
  await sendAll(pending.checkpoints.filter(revalued), [], []);
  await sendAll(
    pending.checkpoints.filter((c) => !revalued(c)),
    pending.deletes,
    pending.removed.filter((r) => !skipped.has(r.thread_id)),
  );
  return [...skipped.values()];
}
