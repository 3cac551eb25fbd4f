/**
 * A push's pending writes on the sync server, by LangGraph's `putWrites`
 * rules, and what they tell about the pushing device: which checkpoints now
 * hold writes it lacks (store.ts then leaves it out of their origin, so its
 * pulls bring them).
 */
import type { PoolClient } from "pg";
import type { WireCheckpoint, WireWrite } from "../sync/protocol.js";
import { cpKey } from "./sql.js";

/**
 * Pending writes by LangGraph's `putWrites` rules, decided per write: a
 * regular write (idx >= 0) keeps the first value stored under (task_id,
 * idx); a special channel's write (negative idx) replaces. Returns the keys
 * of the checkpoints whose writes changed, and of those where a regular
 * write was refused because the server holds another value in its slot
 * (two devices ran the same task apart): the pushing device holds its own,
 * not the server's.
 */
export async function insertWrites(
  client: PoolClient,
  userId: string,
  checkpoints: WireCheckpoint[],
): Promise<{ changed: string[]; diverged: Set<string> }> {
  const regular = new Map<string, [WireCheckpoint, WireWrite]>();
  const special = new Map<string, [WireCheckpoint, WireWrite]>();
  for (const c of checkpoints) {
    for (const write of c.writes) {
      const key = writeKey(c, write.task_id, write.idx);
      if (write.idx < 0) special.set(key, [c, write]);
      else if (!regular.has(key)) regular.set(key, [c, write]);
    }
  }
  const changed: string[] = [];
  const refused = new Map(regular);
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
    const result = await client.query<WrittenSlot>(
      `INSERT INTO lgsync_writes (user_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, type, value)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::bytea[])
       ON CONFLICT ${conflict}
       RETURNING thread_id, checkpoint_ns, checkpoint_id, task_id, idx`,
      writeColumns(userId, rows),
    );
    for (const row of result.rows) {
      changed.push(cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id));
      refused.delete(writeKey(row, row.task_id, row.idx));
    }
  }
  return { changed, diverged: await divergedAmong(client, userId, [...refused.values()]) };
}

/** A write's slot as `insertWrites` returns it. */
interface WrittenSlot {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  idx: number;
}

/** A write slot's key: its checkpoint's key, task id and idx. */
function writeKey(c: Omit<WrittenSlot, "task_id" | "idx">, taskId: string, idx: number): string {
  return `${cpKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id)}\u0000${taskId}\u0000${idx}`;
}

/** The query parameters of `rows` for an unnest of (thread, ns, checkpoint, task, idx, channel, path, type, value). */
function writeColumns(userId: string, rows: readonly [WireCheckpoint, WireWrite][]): unknown[] {
  return [
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
  ];
}

/**
 * The checkpoints among the regular writes the server did not take (their
 * slot was filled) where the stored write differs from the pushed one. Most
 * refusals are the same write pushed again, and usually there are none: the
 * query runs only for refused writes, one primary key lookup each.
 */
async function divergedAmong(
  client: PoolClient,
  userId: string,
  refused: readonly [WireCheckpoint, WireWrite][],
): Promise<Set<string>> {
  if (refused.length === 0) return new Set();
  const result = await client.query<Omit<WrittenSlot, "task_id" | "idx">>(
    `SELECT DISTINCT x.t AS thread_id, x.n AS checkpoint_ns, x.c AS checkpoint_id
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::bytea[])
       AS x(t, n, c, k, i, ch, p, ty, v)
     JOIN lgsync_writes w ON w.user_id = $1 AND w.thread_id = x.t AND w.checkpoint_ns = x.n
       AND w.checkpoint_id = x.c AND w.task_id = x.k AND w.idx = x.i
     WHERE (w.channel, w.task_path, w.type, w.value) IS DISTINCT FROM (x.ch, x.p, x.ty, x.v)`,
    writeColumns(userId, refused),
  );
  return new Set(result.rows.map((row) => cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id)));
}

/**
 * The checkpoints among `parts` whose stored writes include one (by task id
 * and idx) that `pushed` does not carry. Values are compared apart (a
 * regular write the push carried with another value: `insertWrites`'
 * `diverged`); a special write just pushed replaced the stored one.
 */
export async function heldBeyond(
  client: PoolClient,
  userId: string,
  parts: string[][],
  pushed: readonly WireCheckpoint[],
): Promise<Set<string>> {
  // The stored keys are read and compared here, in a hash set: a NOT EXISTS over the pushed writes
  // (an unnest the planner cannot size) ran as a nested loop, every stored write against every pushed
  // one, and a checkpoint of 20,000 writes took 45 s.
  const carried = new Set(pushed.flatMap((c) => c.writes.map((w) => writeKey(c, w.task_id, w.idx))));
  const result = await client.query<WrittenSlot>(
    `SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx
     FROM unnest($2::text[], $3::text[], $4::text[]) AS x(t, n, c)
     JOIN lgsync_writes w ON w.user_id = $1 AND w.thread_id = x.t AND w.checkpoint_ns = x.n AND w.checkpoint_id = x.c`,
    [userId, parts.map((p) => p[0]), parts.map((p) => p[1]), parts.map((p) => p[2])],
  );
  const beyond = new Set<string>();
  for (const row of result.rows)
    if (!carried.has(writeKey(row, row.task_id, row.idx)))
      beyond.add(cpKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id));
  return beyond;
}
