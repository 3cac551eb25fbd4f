/**
 * A push's deletes of whole threads, applied in a few statements whatever
 * their number (store.ts `push` calls it under the user's row lock).
 */
/// <reference types="node" />
import type { PoolClient } from "pg";
import type { WireDelete } from "../sync/protocol.js";

/**
 * Applies a push's deletes: each raises its thread's tombstone (when higher
 * than the stored one, in "C" order) and deletes the thread's checkpoints
 * and writes up to it, and its blobs once no checkpoint is left. The raised
 * tombstones take the next sequence numbers after `seq`, in the order the
 * push lists their threads; returns the last number used. A few statements
 * whatever their number: one round trip each held a pooled connection and
 * the user's lock for 18 s at 20,000 deletes.
 */
export async function applyDeletes(
  client: PoolClient,
  userId: string,
  seq: number,
  deletes: readonly WireDelete[],
): Promise<number> {
  if (deletes.length === 0) return seq;
  // One row per thread, its highest id: a lower delete of the same thread changes nothing after it.
  const raised = await client.query<WireDelete>(
    `INSERT INTO lgsync_tombstones (user_id, thread_id, max_deleted_id, seq)
     SELECT DISTINCT ON (t) $1::text, t, m, 0 FROM unnest($2::text[], $3::text[]) AS x(t, m)
     ORDER BY t, m COLLATE "C" DESC
     ON CONFLICT (user_id, thread_id) DO UPDATE SET max_deleted_id = EXCLUDED.max_deleted_id, seq = EXCLUDED.seq
     WHERE lgsync_tombstones.max_deleted_id COLLATE "C" < EXCLUDED.max_deleted_id COLLATE "C"
     RETURNING thread_id, max_deleted_id`,
    [userId, deletes.map((d) => d.thread_id), deletes.map((d) => d.max_deleted_id)],
  );
  if (raised.rows.length === 0) return seq;
  const position = new Map<string, number>();
  deletes.forEach((d, i) => {
    if (!position.has(d.thread_id)) position.set(d.thread_id, i);
  });
  const rows = raised.rows.sort((a, b) => position.get(a.thread_id)! - position.get(b.thread_id)!);
  const threads = rows.map((r) => r.thread_id);
  await client.query(
    `UPDATE lgsync_tombstones t SET seq = x.s FROM unnest($2::text[], $3::bigint[]) AS x(t, s)
     WHERE t.user_id = $1 AND t.thread_id = x.t`,
    [userId, threads, rows.map((_, i) => seq + 1 + i)],
  );
  for (const table of ["lgsync_checkpoints", "lgsync_writes"]) {
    await client.query(
      `DELETE FROM ${table} d USING unnest($2::text[], $3::text[]) AS x(t, m)
       WHERE d.user_id = $1 AND d.thread_id = x.t AND d.checkpoint_id COLLATE "C" <= x.m`,
      [userId, threads, rows.map((r) => r.max_deleted_id)],
    );
  }
  // Blobs are shared by checkpoints: drop a thread's once no checkpoint of it is left.
  await client.query(
    `DELETE FROM lgsync_blobs b USING unnest($2::text[]) AS x(t)
     WHERE b.user_id = $1 AND b.thread_id = x.t
     AND NOT EXISTS (SELECT 1 FROM lgsync_checkpoints c WHERE c.user_id = $1 AND c.thread_id = x.t)`,
    [userId, threads],
  );
  return seq + rows.length;
}
