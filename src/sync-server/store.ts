/**
 * The sync server's writes on PostgreSQL, each one transaction (reads are in reads.ts, a push's
 * thread deletes in deletes.ts, its pending writes in pending-writes.ts, what they share in sql.ts).
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
import { OWNER_OF_ROW, spaceOwner } from "./apps.js";
import { SyncHttpError } from "./errors.js";
import { notifyPush } from "./notify.js";
import { DEFAULT_MAX_USER_BYTES, assertWithinQuota } from "./quota.js";
import { applyRemovals, removedAmong, takeBackPastQuota } from "./removals.js";
import { versionKey } from "../core/identity.js";
import { applyDeletes } from "./deletes.js";
import { checkpointBytes, cpKey, transaction, writeBytes } from "./sql.js";
import { heldBeyond, insertWrites } from "./pending-writes.js";

export { SyncHttpError };

/** Limits a deployer sets on what one user may store (see `SyncServerOptions.limits`). */
export interface StoreLimits {
  /** Largest a checkpoint may grow with its pending writes, in bytes, across every push. */
  maxCheckpointBytes: number;
  /** Most bytes of values one user may store (see quota.ts). */
  maxUserBytes: number;
  /** Most apps with a space of their own one user may write to (see apps.ts). Default 100. */
  maxApps?: number;
}

/** The limits a server applies when its options name none. */
export const DEFAULT_STORE_LIMITS: Required<StoreLimits> = {
  maxCheckpointBytes: 16 * 1024 * 1024,
  maxUserBytes: DEFAULT_MAX_USER_BYTES,
  maxApps: 100,
};

/**
 * Creates the space's row if it has none. A new app space past the user's
 * `maxApps` is refused (413 `too_many_apps`; the caller's transaction rolls
 * the row back): each app name is a space, and each space a row and a key
 * record of up to 64 KiB that the byte quota does not count, so without a
 * bound a user could store without end by naming new apps.
 */
async function openSpace(client: PoolClient, space: string, maxApps = DEFAULT_STORE_LIMITS.maxApps): Promise<void> {
  const created = await client.query("INSERT INTO lgsync_users (user_id) VALUES ($1) ON CONFLICT DO NOTHING", [space]);
  const owner = spaceOwner(space);
  if (created.rowCount === 0 || owner === space) return;
  const apps = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM lgsync_users WHERE ${OWNER_OF_ROW} = $1 AND user_id <> $1`,
    [owner],
  );
  if (Number(apps.rows[0]!.n) > maxApps)
    throw new SyncHttpError(
      413,
      "too_many_apps",
      `This user writes to at most ${maxApps} apps on this server, each with its own threads, and this one would be ` +
        "one more; nothing of it was stored. Name one of the apps this user already syncs (`app`), or ask the server's operator for more.",
    );
}

/** Creates the user's row if needed (see {@link openSpace}) and locks it; returns its sequence number and stored bytes. */
async function lockUser(
  client: PoolClient,
  userId: string,
  maxApps: number | undefined,
): Promise<{ seq: number; bytes: number }> {
  await openSpace(client, userId, maxApps);
  const locked = await client.query<{ seq: string; bytes: string }>(
    "SELECT seq, bytes FROM lgsync_users WHERE user_id = $1 FOR UPDATE",
    [userId],
  );
  return { seq: Number(locked.rows[0]!.seq), bytes: Number(locked.rows[0]!.bytes) };
}

/** Stores a push: deletes first, then checkpoints (idempotent), in one transaction. */
export function push(pool: Pool, userId: string, limits: StoreLimits, request: PushRequest): Promise<PushResponse> {
  return transaction(pool, "BEGIN", async (client) => {
    const locked = await lockUser(client, userId, limits.maxApps);
    const before = locked.seq;
    let seq = before;

    seq = await applyDeletes(client, userId, seq, request.deletes);

    const removals = await applyRemovals(client, userId, seq, request.removed ?? [], request.device);
    seq = removals.seq;

    // Checkpoints of a thread deleted after them, or removed, are dropped: a
    // device that had not seen the delete must not bring them back.
    const threadIds = [...new Set(request.checkpoints.map((c) => c.thread_id))];
    const tombstones = new Map<string, string>();
    if (threadIds.length > 0) {
      const found = await client.query<{ thread_id: string; max_deleted_id: string }>(
        "SELECT thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND thread_id = ANY($2::text[])",
        [userId, threadIds],
      );
      for (const row of found.rows) tombstones.set(row.thread_id, row.max_deleted_id);
    }
    const removed = await removedAmong(client, userId, request.checkpoints, cpKey);
    const live = request.checkpoints.filter((c) => {
      const max = tombstones.get(c.thread_id);
      return (
        (max === undefined || c.checkpoint_id > max) &&
        !removed.has(cpKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id))
      );
    });
    const dropped = request.checkpoints.length - live.length;

    const changed = new Set<string>();
    let diverged = new Set<string>();
    if (live.length > 0) {
      const inserted = await client.query<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string }>(
        `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
           chain, parent_writes, checkpoint_type, checkpoint, metadata_type, metadata, channel_versions, run_id, seq)
         SELECT $1, t, n, c, p, h, pw, ct, cb, mt, mb, cv, r, 0
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bytea[], $10::text[], $11::bytea[], $12::text[], $13::text[])
           AS x(t, n, c, p, h, pw, ct, cb, mt, mb, cv, r)
         ON CONFLICT DO NOTHING
         RETURNING thread_id, checkpoint_ns, checkpoint_id`,
        [
          userId,
          live.map((c) => c.thread_id),
          live.map((c) => c.checkpoint_ns),
          live.map((c) => c.checkpoint_id),
          live.map((c) => c.parent_checkpoint_id ?? null),
          live.map((c) => c.chain ?? null),
          live.map((c) => (c.parent_writes === undefined ? null : JSON.stringify(c.parent_writes))),
          live.map((c) => c.checkpoint[0]),
          live.map((c) => c.checkpoint[1]),
          live.map((c) => c.metadata[0]),
          live.map((c) => c.metadata[1]),
          live.map((c) => JSON.stringify(c.channel_versions)),
          live.map((c) => c.run_id ?? null),
        ],
      );
      for (const row of inserted.rows) changed.add(cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id));
      // A checkpoint held already that brings a value the server lacked (a prune's snapshot): logged again, so
      // devices holding it pull the value (they may have pulled the removals of the checkpoints before it).
      for (const key of await insertBlobs(client, userId, live)) changed.add(key);
      const writes = await insertWrites(client, userId, live);
      for (const key of writes.changed) changed.add(key);
      // A regular write refused for another value: the device lacks the server's, so it must pull it.
      for (const key of writes.diverged) changed.add(key);
      diverged = writes.diverged;
      // Every checkpoint stored or grown: one new with no writes is as large as its row.
      await assertWithinLimit(client, userId, [...changed], limits.maxCheckpointBytes);
    }

    // New sequence numbers, in push order (parents before children).
    const order = live
      .map((c) => cpKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id))
      .filter((key, i, all) => changed.has(key) && all.indexOf(key) === i);
    await takeBackPastQuota(client, userId, removals.unheld, limits.maxUserBytes);
    await assertWithinQuota(client, userId, locked.bytes, limits.maxUserBytes);
    seq = await assignSeq(client, userId, seq, order, request.device, live, diverged);
    await client.query("UPDATE lgsync_users SET seq = $2 WHERE user_id = $1", [userId, seq]);
    if (seq !== before) await notifyPush(client, userId);
    return { v: SYNC_PROTOCOL_VERSION, changed: order.length, dropped, seq, removed: request.removed?.length ?? 0 };
  });
}

/**
 * Gives the changed checkpoints (keys from {@link cpKey}) the next sequence
 * numbers, in order, and returns the new last one. Each row's `origin`
 * becomes the pushing device only where that device now holds all of it:
 * pulls skip a device's own rows, and a row that also holds another
 * device's writes, which this push did not carry, must still reach it.
 * (Kept per row, the last pusher alone would hide those writes from it for
 * good.) `diverged`: checkpoints where the push carried a regular write the
 * server holds with another value, which the device therefore lacks.
 */
async function assignSeq(
  client: PoolClient,
  userId: string,
  seq: number,
  order: string[],
  device: string | undefined,
  pushed: readonly WireCheckpoint[],
  diverged: ReadonlySet<string>,
): Promise<number> {
  if (order.length === 0) return seq;
  const parts = order.map((key) => key.split("\u0000"));
  const foreign = device === undefined ? new Set<string>() : await heldBeyond(client, userId, parts, pushed);
  for (const key of diverged) foreign.add(key);
  await client.query(
    `UPDATE lgsync_checkpoints SET seq = x.s, origin = x.o
     FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[]) AS x(t, n, c, s, o)
     WHERE user_id = $1 AND thread_id = x.t AND checkpoint_ns = x.n AND checkpoint_id = x.c`,
    [
      userId,
      parts.map((p) => p[0]),
      parts.map((p) => p[1]),
      parts.map((p) => p[2]),
      parts.map((_, i) => seq + 1 + i),
      order.map((key) => (foreign.has(key) ? null : (device ?? null))),
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
  limits: StoreLimits = DEFAULT_STORE_LIMITS,
): Promise<void> {
  return transaction(pool, "BEGIN", async (client) => {
    const locked = await lockUser(client, userId, limits.maxApps);
    const tombstone = await client.query<{ max_deleted_id: string }>(
      "SELECT max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND thread_id = $2",
      [userId, target.thread_id],
    );
    const max = tombstone.rows[0]?.max_deleted_id;
    if (max !== undefined && target.checkpoint_id <= max) return;
    const bundle: WireCheckpoint = {
      ...target,
      checkpoint: ["", new Uint8Array()],
      metadata: ["", new Uint8Array()],
      channel_versions: {},
      blobs: [],
      writes,
    };
    const { changed, diverged } = await insertWrites(client, userId, [bundle]);
    if (changed.length === 0) return;
    await assertWithinLimit(client, userId, changed, limits.maxCheckpointBytes);
    await assertWithinQuota(client, userId, locked.bytes, limits.maxUserBytes);
    const seq = await assignSeq(client, userId, locked.seq, [changed[0]!], device, [bundle], diverged);
    await client.query("UPDATE lgsync_users SET seq = $2 WHERE user_id = $1", [userId, seq]);
    await notifyPush(client, userId);
  });
}

/**
 * Refuses (413, and the push rolls back) when a checkpoint whose writes just
 * grew now holds more than `max` bytes of writes and row: writes accumulate
 * across pushes, and a pull must be able to send a checkpoint whole.
 */
async function assertWithinLimit(client: PoolClient, userId: string, keys: string[], max: number): Promise<void> {
  if (keys.length === 0) return;
  const parts = [...new Set(keys)].map((key) => key.split("\u0000"));
  const over = await client.query<{ thread_id: string; checkpoint_id: string; bytes: string }>(
    `SELECT x.t AS thread_id, x.c AS checkpoint_id,
       coalesce((SELECT sum(${writeBytes("w")}) FROM lgsync_writes w
                 WHERE w.user_id = $1 AND w.thread_id = x.t AND w.checkpoint_ns = x.n AND w.checkpoint_id = x.c), 0)
       + coalesce((SELECT ${checkpointBytes("c")} FROM lgsync_checkpoints c
                   WHERE c.user_id = $1 AND c.thread_id = x.t AND c.checkpoint_ns = x.n AND c.checkpoint_id = x.c), 0) AS bytes
     FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)`,
    [userId, parts.map((p) => p[0]), parts.map((p) => p[1]), parts.map((p) => p[2])],
  );
  const first = over.rows.find((row) => Number(row.bytes) > max);
  if (first) {
    throw new SyncHttpError(
      413,
      "checkpoint_too_large",
      `Checkpoint ${first.checkpoint_id} of thread ${JSON.stringify(first.thread_id)} would hold ${first.bytes} bytes ` +
        `with its pending writes, over this server's limit of ${max}; nothing of this push was applied.`,
    );
  }
}

/**
 * Channel values: one row per (thread, namespace, channel, version); a value
 * already there stays. Returns the checkpoints (keys from {@link cpKey})
 * that carry a value the server did not hold.
 */
async function insertBlobs(client: PoolClient, userId: string, checkpoints: WireCheckpoint[]): Promise<string[]> {
  const id = (threadId: string, ns: string, channel: string, version: string) =>
    `${threadId}\u0000${ns}\u0000${channel}\u0000${version}`;
  const rows = new Map<string, [string, string, string, string, string, Uint8Array]>();
  for (const c of checkpoints) {
    for (const blob of c.blobs) {
      const version = versionKey(blob.version);
      const key = id(c.thread_id, c.checkpoint_ns, blob.channel, version);
      if (!rows.has(key)) rows.set(key, [c.thread_id, c.checkpoint_ns, blob.channel, version, ...blob.value]);
    }
  }
  if (rows.size === 0) return [];
  const inserted = await client.query<{ thread_id: string; checkpoint_ns: string; channel: string; version: string }>(
    `INSERT INTO lgsync_blobs (user_id, thread_id, checkpoint_ns, channel, version, type, value)
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[])
     ON CONFLICT DO NOTHING
     RETURNING thread_id, checkpoint_ns, channel, version`,
    [userId, ...[0, 1, 2, 3, 4, 5].map((i) => [...rows.values()].map((row) => row[i]))],
  );
  const added = new Set(inserted.rows.map((row) => id(row.thread_id, row.checkpoint_ns, row.channel, row.version)));
  return checkpoints
    .filter((c) =>
      c.blobs.some((blob) => added.has(id(c.thread_id, c.checkpoint_ns, blob.channel, versionKey(blob.version)))),
    )
    .map((c) => cpKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id));
}

/**
 * Stores the user's key record if it has none (the first device's wins) and
 * returns the stored one. Refused for a user whose plaintext data is already
 * on the server: mixing would leave rows some device cannot read.
 */
export function putKey(
  pool: Pool,
  userId: string,
  keyRecord: Uint8Array,
  limits: Pick<StoreLimits, "maxApps"> = DEFAULT_STORE_LIMITS,
): Promise<Uint8Array> {
  return transaction(pool, "BEGIN", async (client) => {
    await openSpace(client, userId, limits.maxApps);
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
