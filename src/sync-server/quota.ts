/**
 * The per-user byte quota. `lgsync_users.bytes` counts every byte a user's
 * rows hold in their own columns: values (checkpoint and metadata bytes,
 * channel values, pending writes, as devices sent them), and the ids,
 * channel versions, removal marks and tombstones beside them, all of which a
 * push makes the server keep. Triggers on the five tables keep it, one
 * statement at a time, inside the transaction that changes the rows, so the
 * count is never ahead of or behind them whatever path changed them (push, a
 * thread's delete, a removal, a server-side saver's writes). A push that
 * leaves the user over the quota, and grew them, rolls back whole.
 */
import type { PoolClient } from "pg";
import { SyncHttpError } from "./errors.js";
import { OWNER_OF_ROW, spaceOwner } from "./apps.js";

/** The bytes of `columns` of a row (a NULL one holds none). */
const octets = (...columns: string[]) => columns.map((c) => `coalesce(octet_length(${c}), 0)`).join(" + ");

/**
 * What each table's row costs against the quota: all it holds but `user_id`
 * (and `seq`, `origin`, `idx`: fixed or the server's own). Before, only the
 * values counted, so removal marks and tombstones of checkpoints that never
 * existed, or a checkpoint of a few bytes of values with megabytes of
 * channel versions, grew the tables 16 MiB a push past any quota.
 */
const SIZES = {
  lgsync_checkpoints: octets(
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "checkpoint_type",
    "checkpoint",
    "metadata_type",
    "metadata",
    "channel_versions",
    "run_id",
    "chain",
    "parent_writes",
  ),
  lgsync_blobs: octets("thread_id", "checkpoint_ns", "channel", "version", "type", "value"),
  lgsync_writes: octets(
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "channel",
    "task_path",
    "type",
    "value",
  ),
  lgsync_tombstones: octets("thread_id", "max_deleted_id"),
  lgsync_removed: octets("thread_id", "checkpoint_ns", "checkpoint_id"),
} as const;

/** Every user's bytes counted from the rows (the statement that sets the counter when its meaning changes). */
const RECOUNT = `UPDATE lgsync_users u SET bytes = ${Object.entries(SIZES)
  .map(([table, size]) => `coalesce((SELECT sum(${size}) FROM ${table} r WHERE r.user_id = u.user_id), 0)`)
  .join("\n + ")};`;

/** One table's trigger function: adds what `new_rows` hold, takes away what `old_rows` held. */
function countingFunction(table: keyof typeof SIZES): string {
  const sum = (rows: string) =>
    `UPDATE lgsync_users u SET bytes = u.bytes + d.n * SIGN
       FROM (SELECT user_id, sum(${SIZES[table]}) AS n FROM ${rows} GROUP BY user_id) d
       WHERE u.user_id = d.user_id;`;
  // Statements on a transition table that a trigger does not declare are never run, so never planned.
  return `CREATE OR REPLACE FUNCTION ${table}_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('INSERT', 'UPDATE') THEN ${sum("new_rows").replace("SIGN", "1")} END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') THEN ${sum("old_rows").replace("SIGN", "-1")} END IF;
      RETURN NULL;
    END $$`;
}

/**
 * One statement-level trigger per table and event (a transition table serves
 * one event only). Looked for on the table itself: trigger names are not
 * unique across a database, and looked for by name alone, the tables of a
 * second schema (another server's, in the same database) never got theirs.
 */
function triggers(table: keyof typeof SIZES): string {
  const events = [
    ["ins", "INSERT", "NEW TABLE AS new_rows"],
    ["upd", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"],
    ["del", "DELETE", "OLD TABLE AS old_rows"],
  ] as const;
  return events
    .map(
      ([suffix, event, transition]) =>
        `IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = '${table}'::regclass AND tgname = '${table}_bytes_${suffix}') THEN
           CREATE TRIGGER ${table}_bytes_${suffix} AFTER ${event} ON ${table}
             REFERENCING ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${table}_bytes();
         END IF;`,
    )
    .join("\n");
}

/**
 * The statements that add the counter (counting what is stored already, on
 * a database from before it) and its triggers; idempotent, run after the
 * tables exist, under setupSchema's lock.
 */
export const QUOTA_SCHEMA: readonly string[] = [
  ...Object.keys(SIZES).map((table) => countingFunction(table as keyof typeof SIZES)),
  // A database whose counter predates the ids' count (no trigger on lgsync_removed yet) is counted again
  // from its rows, once: the triggers then keep it so.
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                    AND table_name = 'lgsync_users' AND column_name = 'bytes') THEN
       ALTER TABLE lgsync_users ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
     END IF;
     IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'lgsync_removed'::regclass
                    AND tgname = 'lgsync_removed_bytes_ins') THEN
       ${RECOUNT}
     END IF;
     ${Object.keys(SIZES)
       .map((table) => triggers(table as keyof typeof SIZES))
       .join("\n")}
   END $$`,
];

/** The quota a server applies when its options name none: 1 GiB per user. */
export const DEFAULT_MAX_USER_BYTES = 1024 ** 3;

/** What `space` and all the spaces of its user (across their apps) store now, in bytes. */
export async function storedBytes(client: PoolClient, space: string): Promise<{ own: number; bytes: number }> {
  const row = await client.query<{ own: string; bytes: string }>(
    `SELECT coalesce(sum(bytes) FILTER (WHERE user_id = $1), 0) AS own, coalesce(sum(bytes), 0) AS bytes
     FROM lgsync_users WHERE ${OWNER_OF_ROW} = $2`,
    [space, spaceOwner(space)],
  );
  return { own: Number(row.rows[0]!.own), bytes: Number(row.rows[0]!.bytes) };
}

/**
 * Refuses (413 `quota_exceeded`, and the transaction rolls back) when the
 * user, across the spaces of all their apps, now stores more than `max`
 * bytes, and the space locked by the caller grew past `before`: a push that
 * frees space (a delete) goes through even over the quota, so a user over
 * it can always get back under.
 */
export async function assertWithinQuota(client: PoolClient, space: string, before: number, max: number): Promise<void> {
  const { own, bytes } = await storedBytes(client, space);
  if (bytes > max && own > before)
    throw new SyncHttpError(
      413,
      "quota_exceeded",
      `This push would store ${bytes} bytes for this user, over this server's quota of ${max} bytes per user; ` +
        "nothing of it was applied. Delete threads to free space, or ask the server's operator for a larger quota.",
    );
}
