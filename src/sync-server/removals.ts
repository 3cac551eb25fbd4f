/**
 * Checkpoints removed by `prune` or `deleteForRuns` on a device: a push
 * carries them (`removed`), the server deletes the checkpoint with its
 * pending writes and keeps its ids in `lgsync_removed` with a sequence
 * number, so every device pulls the removal, a new device never receives
 * the checkpoint, and no later push (a device that had not seen the
 * removal) brings it back. Blobs stay, as for a partly deleted thread:
 * other checkpoints of the thread may name them.
 */
import type { PoolClient } from "pg";
import type { WireCheckpoint, WireRemoved } from "../sync/protocol.js";

/**
 * Applies `removed` inside the push's transaction, each new one with the
 * next sequence number after `seq`; returns the last number used.
 */
export async function applyRemovals(
  client: PoolClient,
  userId: string,
  seq: number,
  removed: readonly WireRemoved[],
  device: string | undefined,
): Promise<number> {
  for (const r of removed) {
    const args = [userId, r.thread_id, r.checkpoint_ns, r.checkpoint_id];
    const inserted = await client.query(
      `INSERT INTO lgsync_removed (user_id, thread_id, checkpoint_ns, checkpoint_id, seq, origin)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [...args, seq + 1, device ?? null],
    );
    if (inserted.rowCount === 0) continue; // known already
    seq += 1;
    const where = "user_id = $1 AND thread_id = $2 AND checkpoint_ns = $3 AND checkpoint_id = $4";
    await client.query(`DELETE FROM lgsync_checkpoints WHERE ${where}`, args);
    await client.query(`DELETE FROM lgsync_writes WHERE ${where}`, args);
  }
  return seq;
}

/** The keys (by `keyOf`) of those of `checkpoints` that were removed. */
export async function removedAmong(
  client: PoolClient,
  userId: string,
  checkpoints: readonly WireCheckpoint[],
  keyOf: (threadId: string, ns: string, id: string) => string,
): Promise<Set<string>> {
  if (checkpoints.length === 0) return new Set();
  const found = await client.query<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string }>(
    `SELECT r.thread_id, r.checkpoint_ns, r.checkpoint_id
     FROM lgsync_removed r
     JOIN unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
       ON r.thread_id = x.t AND r.checkpoint_ns = x.n AND r.checkpoint_id = x.c
     WHERE r.user_id = $1`,
    [
      userId,
      checkpoints.map((c) => c.thread_id),
      checkpoints.map((c) => c.checkpoint_ns),
      checkpoints.map((c) => c.checkpoint_id),
    ],
  );
  return new Set(found.rows.map((row) => keyOf(row.thread_id, row.checkpoint_ns, row.checkpoint_id)));
}
