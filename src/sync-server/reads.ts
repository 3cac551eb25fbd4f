/**
 * The sync server's reads on PostgreSQL: pulls (changes after a cursor, each
 * checkpoint complete, one snapshot), the user's summary, and the checkpoint
 * queries of `SyncServerSaver`. Which rows; bundles.ts completes them.
 */
/// <reference types="node" />
import type { Pool, PoolClient } from "pg";
import {
  MAX_THREADS_PAGE,
  MAX_THREADS_UNPAGED,
  SYNC_PATH,
  SYNC_PROTOCOL_VERSION,
  type HelloResponse,
  type PullResponse,
  type ThreadsResponse,
  type WireChange,
  type WireRemoved,
  type WireCheckpoint,
} from "../sync/protocol.js";
import { SyncHttpError } from "./store.js";
import { cpKey, read, transaction, utf16Key, utf16Order } from "./sql.js";
import { ancestorsAfter, ancestorsBefore, headColumns, type CheckpointHead } from "./ancestors.js";
import { inSequence, readDetails, readRows, type CheckpointDbRow } from "./bundles.js";
import { PageSizes } from "./page-sizes.js";

/** Largest response a pull assembles (bytes of values), beyond its first change. */
const PULL_RESPONSE_BYTES = 8 * 1024 * 1024;

/** What {@link readCheckpoints} selects. */
export interface CheckpointQuery {
  threadId?: string;
  checkpointNs?: string;
  checkpointId?: string;
  /** Only ids strictly below this one. */
  before?: string;
  limit?: number;
}

/** A user's checkpoints, complete, newest id first as devices order ids (one snapshot). */
export function readCheckpoints(pool: Pool, userId: string, query: CheckpointQuery): Promise<WireCheckpoint[]> {
  return transaction(pool, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
    const where = ["user_id = $1"];
    const args: unknown[] = [userId];
    const add = (sql: string, value: unknown) => {
      args.push(value);
      where.push(sql.replace("?", `$${args.length}`));
    };
    if (query.threadId !== undefined) add("thread_id = ?", query.threadId);
    if (query.checkpointNs !== undefined) add("checkpoint_ns = ?", query.checkpointNs);
    if (query.checkpointId !== undefined) add("checkpoint_id = ?", query.checkpointId);
    // In the devices' order (see utf16Order), which code point order ("C") is not.
    if (query.before !== undefined) add(`${utf16Order("checkpoint_id")} < ${utf16Order("?::text")}`, query.before);
    let sql = `SELECT seq, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, chain, parent_writes, checkpoint_type, checkpoint,
        metadata_type, metadata, channel_versions, run_id, origin
      FROM lgsync_checkpoints WHERE ${where.join(" AND ")}
      ORDER BY ${utf16Order("checkpoint_id")} DESC, thread_id, checkpoint_ns`;
    if (query.limit !== undefined) {
      args.push(query.limit);
      sql += ` LIMIT $${args.length}`;
    }
    const rows = (await client.query<CheckpointDbRow>(sql, args)).rows;
    const details = await readDetails(client, userId, rows);
    return rows.map((row) => details.get(row)!);
  });
}

/**
 * The newest checkpoint id of a thread (checkpoints and writes), for a
 * delete's tombstone: by UTF-16 code unit, as devices and deletes.ts compare
 * ids (PostgreSQL's "C" order is by code point, see deletes.ts).
 */
export async function newestId(pool: Pool, userId: string, threadId: string): Promise<string | undefined> {
  const result = await read<{ id: string }>(
    pool,
    `SELECT checkpoint_id AS id FROM lgsync_checkpoints WHERE user_id = $1 AND thread_id = $2
     UNION SELECT checkpoint_id FROM lgsync_writes WHERE user_id = $1 AND thread_id = $2`,
    [userId, threadId],
  );
  let newest: string | undefined;
  for (const { id } of result.rows) if (newest === undefined || newest < id) newest = id;
  return newest;
}

/** A change-log entry of a pull, before any value is loaded. */
type Entry = {
  seq: number;
  cp?: CheckpointHead;
  del?: { thread_id: string; max_deleted_id: string };
  rm?: WireRemoved & { origin: string | null };
};

/**
 * Changes after `since`, in sequence order, each checkpoint complete, all
 * from one snapshot. The page is chosen from stored sizes before any value
 * is loaded, so neither the response nor what the server holds to build it
 * grows past {@link PULL_RESPONSE_BYTES}, bar a first checkpoint larger
 * than that on its own (the cap on one checkpoint bounds it), whatever the
 * data. A checkpoint comes after those of its ancestors the log puts after
 * it (ancestors.ts), and after its thread's delete when the log puts that
 * later and it covers the checkpoint's parent (or an ancestor carried with
 * it): a device never holds a checkpoint without its parent, nor without
 * the tombstone that explains where the parent went. Bar ancestors past the
 * budget: a page carries the nearest that fit, and the farther come at their
 * own places in later pages.
 */
export function pull(
  pool: Pool,
  userId: string,
  since: number,
  limit: number,
  threadId?: string,
  device?: string,
  withRemoved = false,
): Promise<PullResponse> {
  return transaction(pool, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
    const threadFilter = threadId === undefined ? "" : "AND thread_id = $4";
    const args: unknown[] = [userId, since, limit + 1, ...(threadId === undefined ? [] : [threadId])];
    const [cps, dels, rms] = await inSequence(
      () =>
        client.query<CheckpointHead>(
          `SELECT ${headColumns("c")}
         FROM lgsync_checkpoints c WHERE user_id = $1 AND seq > $2 ${threadFilter} ORDER BY seq LIMIT $3`,
          args,
        ),
      () =>
        client.query<{ seq: string; thread_id: string; max_deleted_id: string }>(
          `SELECT seq, thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND seq > $2 ${threadFilter} ORDER BY seq LIMIT $3`,
          args,
        ),
      // Clients that do not ask for removals would refuse the kind; their cursor still passes them.
      withRemoved
        ? () =>
            client.query<WireRemoved & { seq: string; origin: string | null }>(
              `SELECT seq, thread_id, checkpoint_ns, checkpoint_id, origin FROM lgsync_removed
             WHERE user_id = $1 AND seq > $2 ${threadFilter} ORDER BY seq LIMIT $3`,
              args,
            )
        : () => Promise.resolve({ rows: [] }),
    );
    const entries: Entry[] = [
      ...cps.rows.map((cp): Entry => ({ seq: Number(cp.seq), cp })),
      ...dels.rows.map((del): Entry => ({
        seq: Number(del.seq),
        del: { thread_id: del.thread_id, max_deleted_id: del.max_deleted_id },
      })),
      ...rms.rows.map((rm): Entry => ({ seq: Number(rm.seq), rm })),
    ].sort((a, b) => a.seq - b.seq);
    let more = entries.length > limit;
    const chosen = entries.slice(0, limit);
    // The asking device's own pushes are skipped: it has them.
    const mine = (row: { origin: string | null } | undefined) => device !== undefined && row?.origin === device;
    const own = (e: Entry) => mine(e.cp ?? e.rm);
    const heads = chosen.filter((e) => e.cp).map((e) => e.cp!);
    const ancestors = await ancestorsAfter(client, userId, since, heads);
    const tombs = await laterTombstones(client, userId, since, heads);
    const sizes = new PageSizes(client, userId);

    // The page: every entry up to the first checkpoint that would take it past
    // the budget, each checkpoint after the ancestors the log puts after it.
    const page: Entry[] = [];
    const carried = new Set<string>();
    /** Threads whose later delete this page carried ahead (it is not sent again at its own place). */
    const carriedTombs = new Set<string>();
    const keyOf = (head: CheckpointHead) => cpKey(head.thread_id, head.checkpoint_ns, head.checkpoint_id);
    let cursor = since;
    let bytes = 0;
    for (const [index, entry] of chosen.entries()) {
      let sent: CheckpointHead[] = [];
      if (entry.cp && !own(entry) && !carried.has(keyOf(entry.cp))) {
        const skip = (head: CheckpointHead) => carried.has(keyOf(head)) || mine(head);
        const toSend = (cp: CheckpointHead) => [...ancestorsBefore(cp, ancestors, skip), cp];
        sent = toSend(entry.cp);
        // Weighed a batch at a time, as far as the budget left may reach: this entry's and the next ones'.
        const following = function* () {
          for (const next of chosen.slice(index + 1)) if (next.cp && !own(next)) yield* toSend(next.cp);
        };
        if (!sizes.has(sent)) await sizes.weigh(sent, following(), PULL_RESPONSE_BYTES - bytes);
        // Ancestors left unweighed are past the budget with the nearer ones alone (see PageSizes.weigh).
        if (page.length > 0 && (!sizes.has(sent) || bytes + sizes.of(sent) > PULL_RESPONSE_BYTES)) {
          more = true;
          break;
        }
        // First in its page and past the budget with the ancestors it carries (a chain pushed newest first puts
        // them all after it): only the nearest that fit come with it, the others at their own places, in later
        // pages. Before, the page carried the whole chain: up to the user's quota, built in memory for one answer.
        while (!sizes.has(sent.slice(0, 1))) sent.shift();
        let size = sizes.of(sent);
        while (sent.length > 1 && size > PULL_RESPONSE_BYTES) size -= sizes.of([sent.shift()!]);
        bytes += size;
      }
      cursor = entry.seq;
      if (!entry.cp) {
        if (!own(entry) && !(entry.del && carriedTombs.has(entry.del.thread_id))) page.push(entry);
        continue;
      }
      // A parent that a later delete removed on the server: the delete goes first (its seq is later:
      // the device applies it early, as it would at its own place, and meets no checkpoint it covers).
      const tomb = tombs.get(entry.cp.thread_id);
      const parentGone = (head: CheckpointHead) =>
        head.parent_checkpoint_id !== null && head.parent_checkpoint_id <= tomb!.max_deleted_id;
      if (tomb && Number(tomb.seq) > entry.seq && !carriedTombs.has(tomb.thread_id) && sent.some(parentGone)) {
        carriedTombs.add(tomb.thread_id);
        page.push({ seq: Number(tomb.seq), del: { thread_id: tomb.thread_id, max_deleted_id: tomb.max_deleted_id } });
      }
      for (const head of sent) {
        carried.add(keyOf(head));
        page.push({ seq: Number(head.seq), cp: head });
      }
    }
    const rows = await readRows(
      client,
      userId,
      page.filter((e) => e.cp).map((e) => e.cp!),
    );
    const details = await readDetails(client, userId, rows);
    const wires = new Map(rows.map((row) => [row.seq, details.get(row)!]));
    const changes: WireChange[] = page.map((entry): WireChange => {
      if (entry.del) return { kind: "delete", seq: entry.seq, delete: entry.del };
      if (entry.rm) {
        const { thread_id, checkpoint_ns, checkpoint_id } = entry.rm;
        return { kind: "removed", seq: entry.seq, removed: { thread_id, checkpoint_ns, checkpoint_id } };
      }
      return { kind: "checkpoint", seq: entry.seq, checkpoint: wires.get(entry.cp!.seq)! };
    });
    return { v: SYNC_PROTOCOL_VERSION, changes, cursor, more };
  });
}

/** The tombstones of the threads of `heads` that the log puts after `since`, by thread. */
async function laterTombstones(
  client: PoolClient,
  userId: string,
  since: number,
  heads: CheckpointHead[],
): Promise<Map<string, { seq: string; thread_id: string; max_deleted_id: string }>> {
  const threads = [...new Set(heads.filter((h) => h.parent_checkpoint_id !== null).map((h) => h.thread_id))];
  if (threads.length === 0) return new Map();
  const result = await client.query<{ seq: string; thread_id: string; max_deleted_id: string }>(
    "SELECT seq, thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND seq > $2 AND thread_id = ANY($3::text[])",
    [userId, since, threads],
  );
  return new Map(result.rows.map((row) => [row.thread_id, row]));
}

/** Who the user is to the server: sequence, key record, whether it holds data. */
export async function hello(pool: Pool, userId: string, user = userId): Promise<HelloResponse> {
  const result = await read<{ seq: string | null; key_record: Buffer | null; has_data: boolean }>(
    pool,
    `SELECT (SELECT seq FROM lgsync_users WHERE user_id = $1) AS seq,
            (SELECT key_record FROM lgsync_users WHERE user_id = $1) AS key_record,
            EXISTS (SELECT 1 FROM lgsync_checkpoints WHERE user_id = $1) AS has_data`,
    [userId],
  );
  const row = result.rows[0]!;
  return {
    v: SYNC_PROTOCOL_VERSION,
    user,
    keyRecord: row.key_record ? new Uint8Array(row.key_record) : null,
    hasData: row.has_data,
    seq: Number(row.seq ?? 0),
  };
}

/**
 * The user's threads in thread id order as devices order ids (by UTF-16
 * code unit, see utf16Order; before, by the database's collation, which a
 * device's list of threads did not follow): with `page`, at most
 * `page.limit` after `page.after`, and `next` when more follow; without,
 * every one, or 413 `too_many_threads` past {@link MAX_THREADS_UNPAGED}.
 * The order is not the primary key's: an index of it takes a page to its
 * threads (see {@link threadsQuery}).
 */
export async function threads(
  pool: Pool,
  userId: string,
  page?: { after?: string; limit: number },
): Promise<ThreadsResponse> {
  const limit = page ? page.limit : MAX_THREADS_UNPAGED;
  const query = threadsQuery(userId, limit + 1, page?.after);
  const result = await read<{ thread_id: string; checkpoints: string; latest: string | null; seq: string }>(
    pool,
    query.text,
    query.values,
  );
  const more = result.rows.length > limit;
  if (more && !page)
    throw new SyncHttpError(
      413,
      "too_many_threads",
      `This user has more than ${MAX_THREADS_UNPAGED} threads: ask for them a page at a time, ` +
        `GET ${SYNC_PATH}/threads?limit=${MAX_THREADS_PAGE}, then again with &after=<next> while the answer names a next.`,
    );
  const response: ThreadsResponse = {
    v: SYNC_PROTOCOL_VERSION,
    threads: result.rows.slice(0, limit).map((row) => ({
      thread_id: row.thread_id,
      checkpoints: Number(row.checkpoints),
      latest_checkpoint_id: row.latest ?? "",
      seq: Number(row.seq),
    })),
  };
  if (more) response.next = response.threads[limit - 1]!.thread_id;
  return response;
}

/**
 * The query of {@link threads}: at most `limit` of the user's threads after
 * `after`, in the devices' order. It walks the index of that order
 * (`lgsync_checkpoints_thread_order`, schema.ts) from one thread to the
 * next, a probe each, and counts each thread it reached by the primary key:
 * a page reads its own threads. Before, every page grouped all of the
 * user's checkpoints by thread to sort them.
 */
export function threadsQuery(userId: string, limit: number, after?: string): { text: string; values: unknown[] } {
  const key = utf16Key("c.thread_id");
  return {
    text: `WITH RECURSIVE walk AS (
       (SELECT c.thread_id, ${key} AS k FROM lgsync_checkpoints c
        WHERE c.user_id = $1 ${after === undefined ? "" : `AND ${key} > ${utf16Key("$3::text")}`} ORDER BY ${key} LIMIT 1)
       UNION ALL
       SELECT next.thread_id, next.k FROM walk CROSS JOIN LATERAL (
         SELECT c.thread_id, ${key} AS k FROM lgsync_checkpoints c
         WHERE c.user_id = $1 AND ${key} > walk.k ORDER BY ${key} LIMIT 1) next
     )
     SELECT t.thread_id, counted.checkpoints, counted.seq, counted.latest
     FROM (SELECT thread_id, k FROM walk LIMIT $2) t CROSS JOIN LATERAL (
       SELECT count(*) AS checkpoints, max(c.seq) AS seq,
         (array_agg(c.checkpoint_id ORDER BY ${utf16Order("c.checkpoint_id")} DESC) FILTER (WHERE c.checkpoint_ns = ''))[1] AS latest
       FROM lgsync_checkpoints c WHERE c.user_id = $1 AND c.thread_id = t.thread_id) counted
     ORDER BY t.k`,
    values: [userId, limit, ...(after === undefined ? [] : [after])],
  };
}
