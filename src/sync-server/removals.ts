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
import { storedBytes } from "./quota.js";

/**
 * Applies `removed` inside the push's transaction, each new one with the
 * next sequence number after `seq`, in the order the push lists them;
 * returns the last number used, and the new marks of checkpoints the server
 * never held (for {@link takeBackPastQuota}). A few statements whatever
 * their number (one per removal held a pooled connection and the user's
 * lock for 6 s at 20,000).
 */
export async function applyRemovals(
  client: PoolClient,
  userId: string,
  seq: number,
  removed: readonly WireRemoved[],
  device: string | undefined,
): Promise<{ seq: number; unheld: WireRemoved[] }> {
  if (removed.length === 0) return { seq, unheld: [] };
  const unheld = await neverHeld(client, userId, removed);
  const column = (field: keyof WireRemoved) => removed.map((r) => r[field]);
  // A removal listed twice, or known already, is inserted once (DO NOTHING skips it).
  const inserted = await client.query<WireRemoved>(
    `INSERT INTO lgsync_removed (user_id, thread_id, checkpoint_ns, checkpoint_id, seq, origin)
     SELECT $1::text, t, n, c, 0, $5::text FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
     ON CONFLICT DO NOTHING
     RETURNING thread_id, checkpoint_ns, checkpoint_id`,
    [userId, column("thread_id"), column("checkpoint_ns"), column("checkpoint_id"), device ?? null],
  );
  if (inserted.rows.length === 0) return { seq, unheld };
  const keyOf = (r: WireRemoved) => `${r.thread_id}\u0000${r.checkpoint_ns}\u0000${r.checkpoint_id}`;
  const position = new Map<string, number>();
  removed.forEach((r, i) => {
    if (!position.has(keyOf(r))) position.set(keyOf(r), i);
  });
  const rows = inserted.rows.sort((a, b) => position.get(keyOf(a))! - position.get(keyOf(b))!);
  const args = [
    userId,
    rows.map((r) => r.thread_id),
    rows.map((r) => r.checkpoint_ns),
    rows.map((r) => r.checkpoint_id),
  ];
  await client.query(
    `UPDATE lgsync_removed r SET seq = x.s
     FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(t, n, c, s)
     WHERE r.user_id = $1 AND r.thread_id = x.t AND r.checkpoint_ns = x.n AND r.checkpoint_id = x.c`,
    [...args, rows.map((_, i) => seq + 1 + i)],
  );
  for (const table of ["lgsync_checkpoints", "lgsync_writes"]) {
    await client.query(
      `DELETE FROM ${table} d USING unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
       WHERE d.user_id = $1 AND d.thread_id = x.t AND d.checkpoint_ns = x.n AND d.checkpoint_id = x.c`,
      args,
    );
  }
  return { seq: seq + rows.length, unheld };
}

/** Those of `removed` the server holds nothing of (no row, no pending write, no mark), each once. */
async function neverHeld(client: PoolClient, userId: string, removed: readonly WireRemoved[]): Promise<WireRemoved[]> {
  const found = await client.query<WireRemoved>(
    `SELECT DISTINCT x.t AS thread_id, x.n AS checkpoint_ns, x.c AS checkpoint_id
     FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
     WHERE ${["lgsync_checkpoints", "lgsync_writes", "lgsync_removed"]
       .map(
         (table) => `NOT EXISTS (SELECT 1 FROM ${table} r
           WHERE r.user_id = $1 AND r.thread_id = x.t AND r.checkpoint_ns = x.n AND r.checkpoint_id = x.c)`,
       )
       .join(" AND ")}`,
    [userId, removed.map((r) => r.thread_id), removed.map((r) => r.checkpoint_ns), removed.map((r) => r.checkpoint_id)],
  );
  return found.rows;
}

/**
 * Takes back the push's marks of checkpoints the server never held
 * (`unheld`, from {@link applyRemovals}) when the user, across their apps,
 * is now over `max`, so that removals never make a push refused: a removal
 * of a checkpoint the server holds frees more than its mark holds, and one
 * it never held changes nothing without its mark. Kept within the quota, a
 * mark stops a push of that checkpoint still on its way from storing it.
 * Before, such marks counted like any growth: a device sends every removal
 * the server has not acknowledged again with every push, so once they no
 * longer fit, every push of that device was refused, its deletes too.
 */
export async function takeBackPastQuota(
  client: PoolClient,
  userId: string,
  unheld: readonly WireRemoved[],
  max: number,
): Promise<void> {
  if (unheld.length === 0 || (await storedBytes(client, userId)).bytes <= max) return;
  await client.query(
    `DELETE FROM lgsync_removed d USING unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
     WHERE d.user_id = $1 AND d.thread_id = x.t AND d.checkpoint_ns = x.n AND d.checkpoint_id = x.c`,
    [userId, unheld.map((r) => r.thread_id), unheld.map((r) => r.checkpoint_ns), unheld.map((r) => r.checkpoint_id)],
  );
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
