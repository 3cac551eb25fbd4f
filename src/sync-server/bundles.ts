/**
 * Checkpoints as the wire carries them, from their stored rows: each row with
 * the blobs its channel versions name and its pending writes, read in the
 * caller's transaction (a pull's snapshot, a saver's read). reads.ts chooses
 * the rows; this reads what completes them.
 */
/// <reference types="node" />
import type { PoolClient, Pool } from "pg";
import type { WireCheckpoint, WireWrite } from "../sync/protocol.js";
import { versionFromKey, versionKey } from "../core/identity.js";
import { cpKey, read } from "./sql.js";
import type { CheckpointHead } from "./ancestors.js";

/**
 * Runs `queries` one after another on one client, resolving to their
 * results in order: pg queues queries sent while one runs, with a
 * deprecation warning (pg 9 refuses them), and one connection runs them in
 * sequence anyway.
 */
export async function inSequence<T extends readonly (() => Promise<unknown>)[]>(
  ...queries: T
): Promise<{ -readonly [K in keyof T]: Awaited<ReturnType<T[K]>> }> {
  const results: unknown[] = [];
  for (const query of queries) results.push(await query());
  return results as { -readonly [K in keyof T]: Awaited<ReturnType<T[K]>> };
}

/** A checkpoint row as stored, with its bytes. */
export type CheckpointDbRow = Omit<CheckpointHead, "own_bytes"> & {
  checkpoint: Buffer;
  metadata: Buffer;
  /** JSON text of the row's channel versions. */
  channel_versions: string;
  /** JSON text of the row's `parent_writes` (binding version 4), or NULL. */
  parent_writes: string | null;
};

/** The full rows (with their bytes) of the checkpoints a page sends. */
export async function readRows(
  client: PoolClient,
  userId: string,
  heads: CheckpointHead[],
): Promise<CheckpointDbRow[]> {
  if (heads.length === 0) return [];
  const result = await client.query<CheckpointDbRow>(
    `SELECT c.seq, c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.chain, c.parent_writes, c.checkpoint_type,
       c.checkpoint, c.metadata_type, c.metadata, c.channel_versions, c.run_id, c.origin
     FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
     JOIN lgsync_checkpoints c ON c.user_id = $1 AND c.thread_id = x.t AND c.checkpoint_ns = x.n AND c.checkpoint_id = x.c
     ORDER BY c.seq`,
    [userId, heads.map((r) => r.thread_id), heads.map((r) => r.checkpoint_ns), heads.map((r) => r.checkpoint_id)],
  );
  return result.rows;
}

/** A blob's identity within a user. */
export function blobId(threadId: string, ns: string, channel: string, version: string): string {
  return `${threadId}\u0000${ns}\u0000${channel}\u0000${version}`;
}

/** Each distinct blob the rows reference, once: unchanged channels share a version across checkpoints. */
export function distinctBlobKeys(
  rows: readonly Pick<CheckpointDbRow, "thread_id" | "checkpoint_ns">[],
  versions: readonly Record<string, string | number>[],
): [string, string, string, string][] {
  const keys: [string, string, string, string][] = [];
  const seen = new Set<string>();
  rows.forEach((row, i) => {
    for (const [channel, version] of Object.entries(versions[i]!)) {
      const key: [string, string, string, string] = [row.thread_id, row.checkpoint_ns, channel, versionKey(version)];
      const id = blobId(...key);
      if (!seen.has(id)) {
        seen.add(id);
        keys.push(key);
      }
    }
  });
  return keys;
}

/** The blobs each checkpoint references and its writes, read in the pull's snapshot. */
export async function readDetails(
  client: PoolClient,
  userId: string,
  rows: CheckpointDbRow[],
): Promise<Map<CheckpointDbRow, WireCheckpoint>> {
  const result = new Map<CheckpointDbRow, WireCheckpoint>();
  if (rows.length === 0) return result;
  const versions = rows.map((row) => JSON.parse(row.channel_versions) as Record<string, string | number>);
  const blobKeys = distinctBlobKeys(rows, versions);
  const [blobs, writes] = await inSequence(
    () =>
      client.query<{
        thread_id: string;
        checkpoint_ns: string;
        channel: string;
        version: string;
        type: string;
        value: Buffer;
      }>(
        `SELECT b.thread_id, b.checkpoint_ns, b.channel, b.version, b.type, b.value
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(t, n, ch, v)
       JOIN lgsync_blobs b ON b.user_id = $1 AND b.thread_id = x.t AND b.checkpoint_ns = x.n AND b.channel = x.ch AND b.version = x.v`,
        [userId, ...[0, 1, 2, 3].map((i) => blobKeys.map((key) => key[i]))],
      ),
    () =>
      client.query<WriteColumns & { thread_id: string; checkpoint_ns: string; checkpoint_id: string }>(
        `SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.task_path, w.type, w.value
       FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
       JOIN lgsync_writes w ON w.user_id = $1 AND w.thread_id = x.t AND w.checkpoint_ns = x.n AND w.checkpoint_id = x.c
       ORDER BY w.task_id, w.idx`,
        [userId, rows.map((r) => r.thread_id), rows.map((r) => r.checkpoint_ns), rows.map((r) => r.checkpoint_id)],
      ),
  );
  const blobMap = new Map(blobs.rows.map((b) => [blobId(b.thread_id, b.checkpoint_ns, b.channel, b.version), b]));
  const writeMap = new Map<string, WireWrite[]>();
  for (const w of writes.rows) {
    const key = cpKey(w.thread_id, w.checkpoint_ns, w.checkpoint_id);
    const list = writeMap.get(key) ?? [];
    list.push(wireWrite(w));
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
    if (row.chain !== null) wire.chain = row.chain;
    if (row.parent_writes !== null)
      wire.parent_writes = JSON.parse(row.parent_writes) as WireCheckpoint["parent_writes"];
    if (row.run_id !== null) wire.run_id = row.run_id;
    for (const [channel, version] of Object.entries(wire.channel_versions)) {
      const blob = blobMap.get(blobId(row.thread_id, row.checkpoint_ns, channel, versionKey(version)));
      if (blob)
        wire.blobs.push({
          channel,
          version: versionFromKey(blob.version),
          value: [blob.type, new Uint8Array(blob.value)],
        });
    }
    result.set(row, wire);
  });
  return result;
}

/** One checkpoint's pending writes, whether or not the checkpoint row is stored. */
export async function readWrites(
  pool: Pool,
  userId: string,
  threadId: string,
  checkpointNs: string,
  checkpointId: string,
): Promise<WireWrite[]> {
  const result = await read<WriteColumns>(
    pool,
    `SELECT task_id, idx, channel, task_path, type, value FROM lgsync_writes
     WHERE user_id = $1 AND thread_id = $2 AND checkpoint_ns = $3 AND checkpoint_id = $4`,
    [userId, threadId, checkpointNs, checkpointId],
  );
  return result.rows.map(wireWrite);
}

/** A pending write's columns as stored in `lgsync_writes`. */
interface WriteColumns {
  task_id: string;
  idx: number;
  channel: string;
  task_path: string;
  type: string;
  value: Buffer;
}

/** A stored pending write as the wire carries it. */
function wireWrite(w: WriteColumns): WireWrite {
  return {
    task_id: w.task_id,
    idx: w.idx,
    channel: w.channel,
    task_path: w.task_path,
    value: [w.type, new Uint8Array(w.value)],
  };
}
