/**
 * The change log orders checkpoints by their latest change, not by their
 * creation: a checkpoint that gains pending writes after its children reached
 * the server gets a sequence number after theirs. A pull page that stopped
 * between a child and that parent would leave the device holding a
 * checkpoint without its parent until a later page. So a page carries,
 * before each checkpoint, the ancestors (same thread and namespace) that the
 * log puts after it; they come again at their own place, which a device
 * applies as a no-op (checkpoints are immutable, writes merge by the
 * `putWrites` rules).
 */
/// <reference types="node" />
import type { PoolClient } from "pg";
import { checkpointBytes, cpKey } from "./sql.js";

/**
 * A checkpoint row's columns without its bytes, and the size of those bytes.
 * Without its channel versions and parent writes either, which a client
 * may make megabytes each: a pull reads the heads of up to 1,000 changes
 * to choose its page, and loads those only for the heads its budget takes.
 */
export interface CheckpointHead {
  seq: string;
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  chain: string | null;
  checkpoint_type: string;
  metadata_type: string;
  run_id: string | null;
  origin: string | null;
  own_bytes: number;
}

/** The columns of a {@link CheckpointHead}, selected from `lgsync_checkpoints` as `alias`. */
export function headColumns(alias: string): string {
  const columns = [
    "seq",
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "chain",
    "checkpoint_type",
    "metadata_type",
    "run_id",
    "origin",
  ];
  return `${columns.map((c) => `${alias}.${c}`).join(", ")},
    ${checkpointBytes(alias)} AS own_bytes`;
}

/**
 * Every ancestor of `heads` with a sequence number after `since` (what a
 * device at cursor `since` may still lack), by {@link cpKey}. The walk up
 * stops at an ancestor at or before `since`: a device past it received it,
 * with what it descends from, in an earlier page.
 */
export async function ancestorsAfter(
  client: PoolClient,
  userId: string,
  since: number,
  heads: readonly CheckpointHead[],
): Promise<Map<string, CheckpointHead>> {
  const children = heads.filter((head) => head.parent_checkpoint_id !== null);
  if (children.length === 0) return new Map();
  const result = await client.query<CheckpointHead>(
    `WITH RECURSIVE up AS (
       SELECT ${headColumns("c")}
       FROM unnest($3::text[], $4::text[], $5::text[]) AS x(t, n, p)
       JOIN lgsync_checkpoints c ON c.user_id = $1 AND c.thread_id = x.t AND c.checkpoint_ns = x.n AND c.checkpoint_id = x.p
       WHERE c.seq > $2
       UNION
       SELECT ${headColumns("c")}
       FROM up JOIN lgsync_checkpoints c ON c.user_id = $1 AND c.thread_id = up.thread_id
         AND c.checkpoint_ns = up.checkpoint_ns AND c.checkpoint_id = up.parent_checkpoint_id
       WHERE c.seq > $2
     )
     SELECT * FROM up`,
    [
      userId,
      since,
      children.map((head) => head.thread_id),
      children.map((head) => head.checkpoint_ns),
      children.map((head) => head.parent_checkpoint_id),
    ],
  );
  return new Map(result.rows.map((row) => [cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id), row]));
}

/**
 * The ancestors `head` needs sent before it, farthest first: those the log
 * puts after it, found by walking up through `ancestors` (from
 * {@link ancestorsAfter}). `skip` says which the device already holds or
 * the page already carries.
 */
export function ancestorsBefore(
  head: CheckpointHead,
  ancestors: ReadonlyMap<string, CheckpointHead>,
  skip: (ancestor: CheckpointHead) => boolean,
): CheckpointHead[] {
  const needed: CheckpointHead[] = [];
  const seen = new Set<string>();
  let parent = head.parent_checkpoint_id;
  while (parent !== null) {
    const key = cpKey(head.thread_id, head.checkpoint_ns, parent);
    const ancestor = ancestors.get(key);
    // A cycle of parents cannot come from a saver, but rows are the client's: never loop on one.
    if (ancestor === undefined || seen.has(key)) break;
    seen.add(key);
    if (Number(ancestor.seq) > Number(head.seq) && !skip(ancestor)) needed.push(ancestor);
    parent = ancestor.parent_checkpoint_id;
  }
  return needed.reverse();
}
