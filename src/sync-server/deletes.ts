/**
 * A push's deletes of whole threads, applied in a few statements whatever
 * their number (store.ts `push` calls it under the user's row lock).
 */
/// <reference types="node" />
import type { PoolClient } from "pg";
import type { WireDelete } from "../sync/protocol.js";

/**
 * Applies a push's deletes: each raises its thread's tombstone (when higher
 * than the stored one) and deletes the thread's checkpoints and writes up to
 * it, and its blobs once no checkpoint is left. The raised tombstones take
 * the next sequence numbers after `seq`, in the order the push lists their
 * threads; returns the last number used. A few statements whatever their
 * number: one round trip each held a pooled connection and the user's lock
 * for 18 s at 20,000 deletes.
 *
 * Ids are compared here, in JavaScript, as devices compare them (UTF-16 code
 * units: `<`, IndexedDB's key order), not in SQL: PostgreSQL's "C" order is
 * by code point, which puts an id holding U+E000-U+FFFF before one holding a
 * character above U+FFFF at the same place, where devices put it after. So
 * a delete up to a device's newest id left its older checkpoints on the
 * server, for every other device to pull back.
 */
export async function applyDeletes(
  client: PoolClient,
  userId: string,
  seq: number,
  deletes: readonly WireDelete[],
): Promise<number> {
  if (deletes.length === 0) return seq;
  // One per thread, its highest id (a lower delete of the same thread changes nothing after it), in the
  // order of each thread's first delete.
  const highest = new Map<string, string>();
  for (const d of deletes) {
    const max = highest.get(d.thread_id);
    if (max === undefined || max < d.max_deleted_id) highest.set(d.thread_id, d.max_deleted_id);
  }
  // The user's row is locked (store.ts `push`): no other push changes these tombstones meanwhile.
  const stored = await client.query<WireDelete>(
    "SELECT thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND thread_id = ANY($2::text[])",
    [userId, [...highest.keys()]],
  );
  const current = new Map(stored.rows.map((row) => [row.thread_id, row.max_deleted_id]));
  const raised = [...highest].filter(([thread, max]) => {
    const was = current.get(thread);
    return was === undefined || was < max;
  });
  if (raised.length === 0) return seq;
  const threads = raised.map(([thread]) => thread);
  await client.query(
    `INSERT INTO lgsync_tombstones (user_id, thread_id, max_deleted_id, seq)
     SELECT $1::text, t, m, s FROM unnest($2::text[], $3::text[], $4::bigint[]) AS x(t, m, s)
     ON CONFLICT (user_id, thread_id) DO UPDATE SET max_deleted_id = EXCLUDED.max_deleted_id, seq = EXCLUDED.seq`,
    [userId, threads, raised.map(([, max]) => max), raised.map((_, i) => seq + 1 + i)],
  );
  // The checkpoint ids the threads hold (rows and writes: writes may come before their checkpoint), to
  // compare each with its thread's new tombstone.
  const held = await client.query<{ thread_id: string; checkpoint_id: string }>(
    `SELECT thread_id, checkpoint_id FROM lgsync_checkpoints WHERE user_id = $1 AND thread_id = ANY($2::text[])
     UNION SELECT thread_id, checkpoint_id FROM lgsync_writes WHERE user_id = $1 AND thread_id = ANY($2::text[])`,
    [userId, threads],
  );
  const limit = new Map(raised);
  const doomed = held.rows.filter((row) => row.checkpoint_id <= limit.get(row.thread_id)!);
  if (doomed.length > 0) {
    for (const table of ["lgsync_checkpoints", "lgsync_writes"]) {
      await client.query(
        `DELETE FROM ${table} d USING unnest($2::text[], $3::text[]) AS x(t, c)
         WHERE d.user_id = $1 AND d.thread_id = x.t AND d.checkpoint_id = x.c`,
        [userId, doomed.map((row) => row.thread_id), doomed.map((row) => row.checkpoint_id)],
      );
    }
  }
  // Blobs are shared by checkpoints: drop a thread's once no checkpoint of it is left.
  await client.query(
    `DELETE FROM lgsync_blobs b USING unnest($2::text[]) AS x(t)
     WHERE b.user_id = $1 AND b.thread_id = x.t
     AND NOT EXISTS (SELECT 1 FROM lgsync_checkpoints c WHERE c.user_id = $1 AND c.thread_id = x.t)`,
    [userId, threads],
  );
  return seq + raised.length;
}
