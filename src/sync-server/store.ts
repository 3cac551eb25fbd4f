/**
 * The sync server's storage operations on PostgreSQL, each one transaction.
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
  versionFromKey,
  versionKey,
  type HelloResponse,
  type PullResponse,
  type PushRequest,
  type PushResponse,
  type ThreadsResponse,
  type WireChange,
  type WireCheckpoint,
  type WireWrite,
} from "../sync/protocol.js";

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

/** Largest response a pull assembles (bytes of values), beyond its first change. */
const PULL_RESPONSE_BYTES = 8 * 1024 * 1024;

/** Runs `work` in a transaction on one pooled connection. */
async function transaction<R>(pool: Pool, begin: string, work: (client: PoolClient) => Promise<R>): Promise<R> {
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
function cpKey(threadId: string, ns: string, id: string): string {
  return `${threadId}\u0000${ns}\u0000${id}`;
}

/** Stores a push: deletes first, then checkpoints (idempotent), in one transaction. */
export function push(pool: Pool, userId: string, request: PushRequest): Promise<PushResponse> {
  return transaction(pool, "BEGIN", async (client) => {
    await client.query("INSERT INTO lgsync_users (user_id) VALUES ($1) ON CONFLICT DO NOTHING", [userId]);
    const locked = await client.query<{ seq: string }>("SELECT seq FROM lgsync_users WHERE user_id = $1 FOR UPDATE", [userId]);
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
      await client.query(`DELETE FROM lgsync_checkpoints WHERE user_id = $1 AND thread_id = $2 AND checkpoint_id COLLATE "C" <= $3`, args);
      await client.query(`DELETE FROM lgsync_writes WHERE user_id = $1 AND thread_id = $2 AND checkpoint_id COLLATE "C" <= $3`, args);
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
           checkpoint_type, checkpoint, metadata_type, metadata, channel_versions, run_id, seq)
         SELECT $1, t, n, c, p, ct, cb, mt, mb, cv, r, 0
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::text[], $9::bytea[], $10::text[], $11::text[])
           AS x(t, n, c, p, ct, cb, mt, mb, cv, r)
         ON CONFLICT DO NOTHING
         RETURNING thread_id, checkpoint_ns, checkpoint_id`,
        [
          userId,
          live.map((c) => c.thread_id),
          live.map((c) => c.checkpoint_ns),
          live.map((c) => c.checkpoint_id),
          live.map((c) => c.parent_checkpoint_id ?? null),
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
    const order = live.map((c) => cpKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id)).filter((key, i, all) => changed.has(key) && all.indexOf(key) === i);
    if (order.length > 0) {
      const parts = order.map((key) => key.split("\u0000"));
      await client.query(
        `UPDATE lgsync_checkpoints SET seq = x.s, origin = $6
         FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(t, n, c, s)
         WHERE user_id = $1 AND thread_id = x.t AND checkpoint_ns = x.n AND checkpoint_id = x.c`,
        [userId, parts.map((p) => p[0]), parts.map((p) => p[1]), parts.map((p) => p[2]), parts.map((_, i) => seq + 1 + i), request.device ?? null],
      );
      seq += order.length;
    }
    await client.query("UPDATE lgsync_users SET seq = $2 WHERE user_id = $1", [userId, seq]);
    return { v: SYNC_PROTOCOL_VERSION, changed: order.length, dropped, seq };
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

interface CheckpointDbRow {
  seq: string;
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  checkpoint_type: string;
  checkpoint: Buffer;
  metadata_type: string;
  metadata: Buffer;
  channel_versions: string;
  run_id: string | null;
  origin: string | null;
}

/** Changes after `since`, in sequence order, each checkpoint complete, all from one snapshot. */
export function pull(pool: Pool, userId: string, since: number, limit: number, threadId?: string, device?: string): Promise<PullResponse> {
  return transaction(pool, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
    const threadFilter = threadId === undefined ? "" : "AND thread_id = $4";
    const args: unknown[] = [userId, since, limit + 1, ...(threadId === undefined ? [] : [threadId])];
    const [cps, dels] = await Promise.all([
      client.query<CheckpointDbRow>(
        `SELECT seq, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint,
           metadata_type, metadata, channel_versions, run_id, origin
         FROM lgsync_checkpoints WHERE user_id = $1 AND seq > $2 ${threadFilter} ORDER BY seq LIMIT $3`,
        args,
      ),
      client.query<{ seq: string; thread_id: string; max_deleted_id: string }>(
        `SELECT seq, thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND seq > $2 ${threadFilter} ORDER BY seq LIMIT $3`,
        args,
      ),
    ]);
    type Entry = { seq: number; cp?: CheckpointDbRow; del?: { thread_id: string; max_deleted_id: string } };
    const entries: Entry[] = [
      ...cps.rows.map((cp): Entry => ({ seq: Number(cp.seq), cp })),
      ...dels.rows.map((del): Entry => ({ seq: Number(del.seq), del: { thread_id: del.thread_id, max_deleted_id: del.max_deleted_id } })),
    ].sort((a, b) => a.seq - b.seq);
    let more = entries.length > limit;
    const chosen = entries.slice(0, limit);
    // The asking device's own pushes are skipped: it has them.
    const own = (e: Entry) => device !== undefined && e.cp !== undefined && e.cp.origin === device;
    const checkpoints = chosen.filter((e) => e.cp && !own(e)).map((e) => e.cp!);
    const details = await readDetails(client, userId, checkpoints);

    const changes: WireChange[] = [];
    let cursor = since;
    let bytes = 0;
    for (const entry of chosen) {
      if (changes.length > 0 && bytes > PULL_RESPONSE_BYTES) {
        more = true;
        break;
      }
      cursor = entry.seq;
      if (own(entry)) continue;
      if (entry.del) {
        changes.push({ kind: "delete", seq: entry.seq, delete: entry.del });
        continue;
      }
      const wire = details.get(entry.cp!)!;
      bytes += wire.checkpoint[1].length + wire.metadata[1].length;
      for (const blob of wire.blobs) bytes += blob.value[1].length;
      for (const write of wire.writes) bytes += write.value[1].length;
      changes.push({ kind: "checkpoint", seq: entry.seq, checkpoint: wire });
    }
    return { v: SYNC_PROTOCOL_VERSION, changes, cursor, more };
  });
}

/** The blobs each checkpoint references and its writes, read in the pull's snapshot. */
async function readDetails(client: PoolClient, userId: string, rows: CheckpointDbRow[]): Promise<Map<CheckpointDbRow, WireCheckpoint>> {
  const result = new Map<CheckpointDbRow, WireCheckpoint>();
  if (rows.length === 0) return result;
  const versions = rows.map((row) => JSON.parse(row.channel_versions) as Record<string, string | number>);
  const blobKeys: [string, string, string, string][] = [];
  rows.forEach((row, i) => {
    for (const [channel, version] of Object.entries(versions[i]!)) blobKeys.push([row.thread_id, row.checkpoint_ns, channel, versionKey(version)]);
  });
  const [blobs, writes] = await Promise.all([
    client.query<{ thread_id: string; checkpoint_ns: string; channel: string; version: string; type: string; value: Buffer }>(
      `SELECT DISTINCT b.thread_id, b.checkpoint_ns, b.channel, b.version, b.type, b.value
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(t, n, ch, v)
       JOIN lgsync_blobs b ON b.user_id = $1 AND b.thread_id = x.t AND b.checkpoint_ns = x.n AND b.channel = x.ch AND b.version = x.v`,
      [userId, ...[0, 1, 2, 3].map((i) => blobKeys.map((key) => key[i]))],
    ),
    client.query<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string; task_id: string; idx: number; channel: string; task_path: string; type: string; value: Buffer }>(
      `SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.task_path, w.type, w.value
       FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
       JOIN lgsync_writes w ON w.user_id = $1 AND w.thread_id = x.t AND w.checkpoint_ns = x.n AND w.checkpoint_id = x.c
       ORDER BY w.task_id, w.idx`,
      [userId, rows.map((r) => r.thread_id), rows.map((r) => r.checkpoint_ns), rows.map((r) => r.checkpoint_id)],
    ),
  ]);
  const blobMap = new Map(blobs.rows.map((b) => [`${b.thread_id}\u0000${b.checkpoint_ns}\u0000${b.channel}\u0000${b.version}`, b]));
  const writeMap = new Map<string, WireWrite[]>();
  for (const w of writes.rows) {
    const key = cpKey(w.thread_id, w.checkpoint_ns, w.checkpoint_id);
    const list = writeMap.get(key) ?? [];
    list.push({ task_id: w.task_id, idx: w.idx, channel: w.channel, task_path: w.task_path, value: [w.type, new Uint8Array(w.value)] });
    writeMap.set(key, list);
  }
  rows.forEach((row, i) => {
    const wire: WireCheckpoint = {
      thread_id: row.thread_id,
      checkpoint_ns: row.checkpoint_ns,
      checkpoint_id: row.checkpoint_id,
      checkpoint: [row.checkpoint_type, new Uint8Array(row.checkpoint)],
      metadata: [row.metadata_type, new Uint8Array(row.metadata)],
      channel_versions: versions[i]!,
      blobs: [],
      writes: writeMap.get(cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id)) ?? [],
    };
    if (row.parent_checkpoint_id !== null) wire.parent_checkpoint_id = row.parent_checkpoint_id;
    if (row.run_id !== null) wire.run_id = row.run_id;
    for (const [channel, version] of Object.entries(wire.channel_versions)) {
      const blob = blobMap.get(`${row.thread_id}\u0000${row.checkpoint_ns}\u0000${channel}\u0000${versionKey(version)}`);
      if (blob) wire.blobs.push({ channel, version: versionFromKey(blob.version), value: [blob.type, new Uint8Array(blob.value)] });
    }
    result.set(row, wire);
  });
  return result;
}

/** Who the user is to the server: sequence, key record, whether it holds data. */
export async function hello(pool: Pool, userId: string): Promise<HelloResponse> {
  const result = await pool.query<{ seq: string | null; key_record: Buffer | null; has_data: boolean }>(
    `SELECT (SELECT seq FROM lgsync_users WHERE user_id = $1) AS seq,
            (SELECT key_record FROM lgsync_users WHERE user_id = $1) AS key_record,
            EXISTS (SELECT 1 FROM lgsync_checkpoints WHERE user_id = $1) AS has_data`,
    [userId],
  );
  const row = result.rows[0]!;
  return {
    v: SYNC_PROTOCOL_VERSION,
    user: userId,
    keyRecord: row.key_record ? new Uint8Array(row.key_record) : null,
    hasData: row.has_data,
    seq: Number(row.seq ?? 0),
  };
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
      throw new SyncHttpError(409, "plaintext_data", "This user's threads on the server are not encrypted: an encrypted device cannot join them. Use a new user, or delete the threads first.");
    }
    await client.query("UPDATE lgsync_users SET key_record = $2 WHERE user_id = $1", [userId, keyRecord]);
    return keyRecord;
  });
}

/** The user's threads. */
export async function threads(pool: Pool, userId: string): Promise<ThreadsResponse> {
  const result = await pool.query<{ thread_id: string; checkpoints: string; latest: string | null; seq: string }>(
    `SELECT thread_id, count(*) AS checkpoints, max(checkpoint_id COLLATE "C") FILTER (WHERE checkpoint_ns = '') AS latest, max(seq) AS seq
     FROM lgsync_checkpoints WHERE user_id = $1 GROUP BY thread_id ORDER BY thread_id`,
    [userId],
  );
  return {
    v: SYNC_PROTOCOL_VERSION,
    threads: result.rows.map((row) => ({
      thread_id: row.thread_id,
      checkpoints: Number(row.checkpoints),
      latest_checkpoint_id: row.latest ?? "",
      seq: Number(row.seq),
    })),
  };
}
