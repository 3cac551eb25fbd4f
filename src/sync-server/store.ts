/**
 * The sync server's writes on PostgreSQL (reads are in reads.ts), each one transaction.
 *
 * Push takes the user's row lock (`SELECT ... FOR UPDATE` on `lgsync_users`)
 * before handing out sequence numbers, so one user's pushes commit in
 * sequence order whichever server process runs them: a pull never sees seq
 * N+1 committed while N is still to come, and "changes since my cursor" misses
 * nothing. Pushes of different users never wait on each other.
 */
/// <reference types="node" />
import type { Pool, PoolClient } from "pg";
import {
  SYNC_PROTOCOL_VERSION,
  type PushRequest,
  type PushResponse,
  type WireCheckpoint,
  type WireWrite,
} from "../sync/protocol.js";
import { versionKey } from "../core/identity.js";

/** An error with the HTTP status the server answers with. */
export class SyncHttpError extends Error {
  override name = "SyncHttpError";
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Runs `work` in a transaction on one pooled connection. */
export async function transaction<R>(pool: Pool, begin: string, work: (client: PoolClient) => Promise<R>): Promise<R> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** A checkpoint's identity within a user. */
export function cpKey(threadId: string, ns: string, id: string): string {
  return `${threadId}\u0000${ns}\u0000${id}`;
}

/** Stores a push: deletes first, then checkpoints (idempotent), in one transaction. */
export function push(pool: Pool, userId: string, request: PushRequest): Promise<PushResponse> {
  return transaction(pool, "BEGIN", async (client) => {
    await client.query("INSERT INTO lgsync_users (user_id) VALUES ($1) ON CONFLICT DO NOTHING", [userId]);
    const locked = await client.query<{ seq: string }>("SELECT seq FROM lgsync_users WHERE user_id = $1 FOR UPDATE", [
      userId,
    ]);
    let seq = Number(locked.rows[0]!.seq);

    for (const del of request.deletes) {
      const next = seq + 1;
      const raised = await client.query(
        `INSERT INTO lgsync_tombstones (user_id, thread_id, max_deleted_id, seq) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, thread_id) DO UPDATE SET max_deleted_id = EXCLUDED.max_deleted_id, seq = EXCLUDED.seq
         WHERE lgsync_tombstones.max_deleted_id COLLATE "C" < EXCLUDED.max_deleted_id COLLATE "C"
         RETURNING seq`,
        [userId, del.thread_id, del.max_deleted_id, next],
      );
      if (raised.rowCount === 0) continue; // an older or equal delete: already applied
      seq = next;
      const args = [userId, del.thread_id, del.max_deleted_id];
      await client.query(
        `DELETE FROM lgsync_checkpoints WHERE user_id = $1 AND thread_id = $2 AND checkpoint_id COLLATE "C" <= $3`,
        args,
      );
      await client.query(
        `DELETE FROM lgsync_writes WHERE user_id = $1 AND thread_id = $2 AND checkpoint_id COLLATE "C" <= $3`,
        args,
      );
      // Blobs are shared by checkpoints: drop them once no checkpoint of the thread is left.
      await client.query(
        `DELETE FROM lgsync_blobs b WHERE b.user_id = $1 AND b.thread_id = $2
         AND NOT EXISTS (SELECT 1 FROM lgsync_checkpoints c WHERE c.user_id = $1 AND c.thread_id = $2)`,
        [userId, del.thread_id],
      );
    }

    // Checkpoints of a thread deleted after them are dropped: a device that
    // had not seen the delete must not bring them back.
    const threadIds = [...new Set(request.checkpoints.map((c) => c.thread_id))];
    const tombstones = new Map<string, string>();
    if (threadIds.length > 0) {
      const found = await client.query<{ thread_id: string; max_deleted_id: string }>(
        "SELECT thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND thread_id = ANY($2::text[])",
        [userId, threadIds],
      );
      for (const row of found.rows) tombstones.set(row.thread_id, row.max_deleted_id);
    }
    const live = request.checkpoints.filter((c) => {
      const max = tombstones.get(c.thread_id);
      return max === undefined || c.checkpoint_id > max;
    });
    const dropped = request.checkpoints.length - live.length;

    const changed = new Set<string>();
    if (live.length > 0) {
      const inserted = await client.query<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string }>(
        `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
           chain, checkpoint_type, checkpoint, metadata_type, metadata, channel_versions, run_id, seq)
         SELECT $1, t, n, c, p, h, ct, cb, mt, mb, cv, r, 0
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bytea[], $9::text[], $10::bytea[], $11::text[], $12::text[])
           AS x(t, n, c, p, h, ct, cb, mt, mb, cv, r)
         ON CONFLICT DO NOTHING
         RETURNING thread_id, checkpoint_ns, checkpoint_id`,
        [
          userId,
          live.map((c) => c.thread_id),
          live.map((c) => c.checkpoint_ns),
          live.map((c) => c.checkpoint_id),
          live.map((c) => c.parent_checkpoint_id ?? null),
          live.map((c) => c.chain ?? null),
          live.map((c) => c.checkpoint[0]),
          live.map((c) => c.checkpoint[1]),
          live.map((c) => c.metadata[0]),
          live.map((c) => c.metadata[1]),
          live.map((c) => JSON.stringify(c.channel_versions)),
          live.map((c) => c.run_id ?? null),
        ],
      );
      for (const row of inserted.rows) changed.add(cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id));
      await insertBlobs(client, userId, live);
      for (const key of await insertWrites(client, userId, live)) changed.add(key);
    }

    // New sequence numbers, in push order (parents before children).
    const order = live
      .map((c) => cpKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id))
      .filter((key, i, all) => changed.has(key) && all.indexOf(key) === i);
    seq = await assignSeq(client, userId, seq, order, request.device);
    await client.query("UPDATE lgsync_users SET seq = $2 WHERE user_id = $1", [userId, seq]);
    return { v: SYNC_PROTOCOL_VERSION, changed: order.length, dropped, seq };
  });
}

/** Gives the changed checkpoints (keys from {@link cpKey}) the next sequence numbers, in order; returns the new last one. */
async function assignSeq(
  client: PoolClient,
  userId: string,
  seq: number,
  order: string[],
  device: string | undefined,
): Promise<number> {
  if (order.length === 0) return seq;
  const parts = order.map((key) => key.split("\u0000"));
  await client.query(
    `UPDATE lgsync_checkpoints SET seq = x.s, origin = $6
     FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(t, n, c, s)
     WHERE user_id = $1 AND thread_id = x.t AND checkpoint_ns = x.n AND checkpoint_id = x.c`,
    [
      userId,
      parts.map((p) => p[0]),
      parts.map((p) => p[1]),
      parts.map((p) => p[2]),
      parts.map((_, i) => seq + 1 + i),
      device ?? null,
    ],
  );
  return seq + order.length;
}

/**
 * Adds pending writes to one checkpoint (which may not be stored yet: writes
 * can come before their checkpoint), by the `putWrites` rules, and gives the
 * checkpoint a new sequence number if they changed it. Writes to a
 * checkpoint at or below its thread's tombstone are dropped.
 */
export function addWrites(
  pool: Pool,
  userId: string,
  target: Pick<WireCheckpoint, "thread_id" | "checkpoint_ns" | "checkpoint_id">,
  writes: WireWrite[],
  device?: string,
): Promise<void> {
  return transaction(pool, "BEGIN", async (client) => {
    await client.query("INSERT INTO lgsync_users (user_id) VALUES ($1) ON CONFLICT DO NOTHING", [userId]);
    const locked = await client.query<{ seq: string }>("SELECT seq FROM lgsync_users WHERE user_id = $1 FOR UPDATE", [
      userId,
    ]);
    const tombstone = await client.query<{ max_deleted_id: string }>(
      "SELECT max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND thread_id = $2",
      [userId, target.thread_id],
    );
    const max = tombstone.rows[0]?.max_deleted_id;
    if (max !== undefined && target.checkpoint_id <= max) return;
    const changed = await insertWrites(client, userId, [
      {
        ...target,
        checkpoint: ["", new Uint8Array()],
        metadata: ["", new Uint8Array()],
        channel_versions: {},
        blobs: [],
        writes,
      },
    ]);
    if (changed.length === 0) return;
    const seq = await assignSeq(client, userId, Number(locked.rows[0]!.seq), [changed[0]!], device);
    await client.query("UPDATE lgsync_users SET seq = $2 WHERE user_id = $1", [userId, seq]);
  });
}

/** Channel values: one row per (thread, namespace, channel, version); a value already there stays. */
async function insertBlobs(client: PoolClient, userId: string, checkpoints: WireCheckpoint[]): Promise<void> {
  const seen = new Set<string>();
  const rows: [string, string, string, string, string, Uint8Array][] = [];
  for (const c of checkpoints) {
    for (const blob of c.blobs) {
      const version = versionKey(blob.version);
      const key = `${c.thread_id}\u0000${c.checkpoint_ns}\u0000${blob.channel}\u0000${version}`;
      if (seen.has(key)) continue;
      seen.add(key);
      rows.push([c.thread_id, c.checkpoint_ns, blob.channel, version, blob.value[0], blob.value[1]]);
    }
  }
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO lgsync_blobs (user_id, thread_id, checkpoint_ns, channel, version, type, value)
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[])
     ON CONFLICT DO NOTHING`,
    [userId, ...[0, 1, 2, 3, 4, 5].map((i) => rows.map((row) => row[i]))],
  );
}

/**
 * Pending writes by LangGraph's `putWrites` rules, decided per write: a
 * regular write (idx >= 0) keeps the first value stored under (task_id,
 * idx); a special channel's write (negative idx) replaces. Returns the keys
 * of the checkpoints whose writes changed.
 */
async function insertWrites(client: PoolClient, userId: string, checkpoints: WireCheckpoint[]): Promise<string[]> {
  const regular = new Map<string, [WireCheckpoint, WireWrite]>();
  const special = new Map<string, [WireCheckpoint, WireWrite]>();
  for (const c of checkpoints) {
    for (const write of c.writes) {
      const key = `${cpKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id)}\u0000${write.task_id}\u0000${write.idx}`;
      if (write.idx < 0) special.set(key, [c, write]);
      else if (!regular.has(key)) regular.set(key, [c, write]);
    }
  }
  const changed: string[] = [];
  for (const [rows, conflict] of [
    [[...regular.values()], "DO NOTHING"],
    [
      [...special.values()],
      `(user_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE
       SET channel = EXCLUDED.channel, task_path = EXCLUDED.task_path, type = EXCLUDED.type, value = EXCLUDED.value
       WHERE (lgsync_writes.channel, lgsync_writes.task_path, lgsync_writes.type, lgsync_writes.value)
         IS DISTINCT FROM (EXCLUDED.channel, EXCLUDED.task_path, EXCLUDED.type, EXCLUDED.value)`,
    ],
  ] as const) {
    if (rows.length === 0) continue;
    const result = await client.query<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string }>(
      `INSERT INTO lgsync_writes (user_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, type, value)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::bytea[])
       ON CONFLICT ${conflict}
       RETURNING thread_id, checkpoint_ns, checkpoint_id`,
      [
        userId,
        rows.map(([c]) => c.thread_id),
        rows.map(([c]) => c.checkpoint_ns),
        rows.map(([c]) => c.checkpoint_id),
        rows.map(([, w]) => w.task_id),
        rows.map(([, w]) => w.idx),
        rows.map(([, w]) => w.channel),
        rows.map(([, w]) => w.task_path),
        rows.map(([, w]) => w.value[0]),
        rows.map(([, w]) => w.value[1]),
      ],
    );
    for (const row of result.rows) changed.push(cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id));
  }
  return changed;
}

/**
 * Stores the user's key record if it has none (the first device's wins) and
 * returns the stored one. Refused for a user whose plaintext data is already
 * on the server: mixing would leave rows some device cannot read.
 */
export function putKey(pool: Pool, userId: string, keyRecord: Uint8Array): Promise<Uint8Array> {
  return transaction(pool, "BEGIN", async (client) => {
    await client.query("INSERT INTO lgsync_users (user_id) VALUES ($1) ON CONFLICT DO NOTHING", [userId]);
    const row = await client.query<{ key_record: Buffer | null; has_data: boolean }>(
      `SELECT key_record, EXISTS (SELECT 1 FROM lgsync_checkpoints WHERE user_id = $1) AS has_data
       FROM lgsync_users WHERE user_id = $1 FOR UPDATE`,
      [userId],
    );
    const { key_record: existing, has_data: hasData } = row.rows[0]!;
    if (existing) return new Uint8Array(existing);
    if (hasData) {
      throw new SyncHttpError(
        409,
        "plaintext_data",
        "This user's threads on the server are not encrypted: an encrypted device cannot join them. Use a new user, or delete the threads first.",
      );
    }
    await client.query("UPDATE lgsync_users SET key_record = $2 WHERE user_id = $1", [userId, keyRecord]);
    return keyRecord;
  });
}
