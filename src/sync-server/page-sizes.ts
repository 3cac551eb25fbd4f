/**
 * What the checkpoints of a pull page weigh on the wire, weighed a batch at
 * a time as the page fills. Weighing a checkpoint reads its channel
 * versions (which name its blobs), which a client may make megabytes: the
 * page's budget, not the pull's limit of 1,000 changes, bounds what is read.
 */
/// <reference types="node" />
import type { PoolClient } from "pg";
import { versionKey } from "../core/identity.js";
import { cpKey, writeBytes as writeRowBytes } from "./sql.js";
import type { CheckpointHead } from "./ancestors.js";
import { blobId, distinctBlobKeys, inSequence } from "./bundles.js";

/** The weights of a pull's checkpoints, in the pull's transaction. */
export class PageSizes {
  readonly #client: PoolClient;
  readonly #userId: string;
  readonly #sizes = new Map<CheckpointHead, number>();

  constructor(client: PoolClient, userId: string) {
    this.#client = client;
    this.#userId = userId;
  }

  /** Whether every one of `heads` is weighed. */
  has(heads: readonly CheckpointHead[]): boolean {
    return heads.every((head) => this.#sizes.has(head));
  }

  /** What `heads` weigh together (each weighed already). */
  of(heads: readonly CheckpointHead[]): number {
    return heads.reduce((sum, head) => sum + this.#sizes.get(head)!, 0);
  }

  /**
   * Weighs of `first` (a checkpoint after the ancestors it carries, farthest
   * first) the checkpoint and as many of its nearest ancestors as `room`,
   * the bytes the page has left, may take by their rows' own bytes, and then
   * of `following` (in page order) as many as the room left may take: a head
   * weighs at least those, so the page is full before it needs more, and
   * what is read to weigh them stays within the budget. Those of `first`
   * left unweighed are past the room with the nearer ones alone: the page
   * cannot carry them (a first checkpoint sheds its farthest ancestors, see
   * reads.ts), and a chain the log holds backwards is read a page at a time,
   * not whole at every page.
   */
  async weigh(first: readonly CheckpointHead[], following: Iterable<CheckpointHead>, room: number): Promise<void> {
    const batch = new Set<CheckpointHead>();
    let weight = 0;
    const take = (head: CheckpointHead) => {
      if (this.#sizes.has(head)) weight += this.#sizes.get(head)!;
      else if (!batch.has(head)) {
        batch.add(head);
        weight += Number(head.own_bytes);
      }
    };
    // The checkpoint itself always: a first in its page is sent whatever it weighs.
    for (let i = first.length - 1; i >= 0 && (i === first.length - 1 || weight <= room); i--) take(first[i]!);
    for (const head of following) {
      if (weight > room) break;
      take(head);
    }
    for (const [head, size] of await storedSizes(this.#client, this.#userId, [...batch])) this.#sizes.set(head, size);
  }
}

/** What each checkpoint weighs on the wire (its bytes, its blobs, its writes), from stored sizes alone. */
async function storedSizes(
  client: PoolClient,
  userId: string,
  heads: CheckpointHead[],
): Promise<Map<CheckpointHead, number>> {
  const result = new Map<CheckpointHead, number>();
  if (heads.length === 0) return result;
  const keys = [heads.map((r) => r.thread_id), heads.map((r) => r.checkpoint_ns), heads.map((r) => r.checkpoint_id)];
  const stored = await client.query<{ i: string; channel_versions: string }>(
    `SELECT x.i, c.channel_versions FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS x(t, n, c, i)
     JOIN lgsync_checkpoints c ON c.user_id = $1 AND c.thread_id = x.t AND c.checkpoint_ns = x.n AND c.checkpoint_id = x.c`,
    [userId, ...keys],
  );
  const versions = heads.map((): Record<string, string | number> => ({}));
  for (const row of stored.rows)
    versions[Number(row.i) - 1] = JSON.parse(row.channel_versions) as Record<string, string | number>;
  const blobKeys = distinctBlobKeys(heads, versions);
  const [blobs, writes] = await inSequence(
    () =>
      client.query<{ thread_id: string; checkpoint_ns: string; channel: string; version: string; bytes: number }>(
        `SELECT b.thread_id, b.checkpoint_ns, b.channel, b.version,
         octet_length(b.value) + octet_length(b.channel) + octet_length(b.version) AS bytes
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(t, n, ch, v)
       JOIN lgsync_blobs b ON b.user_id = $1 AND b.thread_id = x.t AND b.checkpoint_ns = x.n AND b.channel = x.ch AND b.version = x.v`,
        [userId, ...[0, 1, 2, 3].map((i) => blobKeys.map((key) => key[i]))],
      ),
    () =>
      client.query<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string; bytes: string }>(
        `SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, sum(${writeRowBytes("w")}) AS bytes
       FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
       JOIN lgsync_writes w ON w.user_id = $1 AND w.thread_id = x.t AND w.checkpoint_ns = x.n AND w.checkpoint_id = x.c
       GROUP BY w.thread_id, w.checkpoint_ns, w.checkpoint_id`,
        [userId, ...keys],
      ),
  );
  const blobBytes = new Map(
    blobs.rows.map((b) => [blobId(b.thread_id, b.checkpoint_ns, b.channel, b.version), b.bytes]),
  );
  const writeBytes = new Map(
    writes.rows.map((w) => [cpKey(w.thread_id, w.checkpoint_ns, w.checkpoint_id), Number(w.bytes)]),
  );
  heads.forEach((head, i) => {
    let size =
      Number(head.own_bytes) + (writeBytes.get(cpKey(head.thread_id, head.checkpoint_ns, head.checkpoint_id)) ?? 0);
    for (const [channel, version] of Object.entries(versions[i]!))
      size += blobBytes.get(blobId(head.thread_id, head.checkpoint_ns, channel, versionKey(version))) ?? 0;
    result.set(head, size);
  });
  return result;
}
