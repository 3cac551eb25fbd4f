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

/**
 * The version of {@link SIZES}' counting, in the name of each trigger
 * function (`lgsync_checkpoints_bytes_v2`). Servers before it named theirs
 * `<table>_bytes`, whatever they counted, and replaced those functions at
 * every start (`CREATE OR REPLACE`): an older process started during a
 * rolling deploy put its counting (values alone) back under the newer
 * triggers. Now each version writes functions of its own name, which only
 * its triggers run: an older process replaces functions nothing runs any
 * more, finds the triggers there and leaves them, and a server moves the
 * triggers only from an older version to its own, never from a newer one.
 * Raise it whenever SIZES changes.
 */
const COUNTING_VERSION = 2;

type Table = keyof typeof SIZES;
const TABLES = Object.keys(SIZES) as Table[];
const EVENTS = [
  ["ins", "INSERT", "NEW TABLE AS new_rows"],
  ["upd", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"],
  ["del", "DELETE", "OLD TABLE AS old_rows"],
] as const;

/** One table's trigger function: adds what `new_rows` hold, takes away what `old_rows` held. */
function countingFunction(table: Table): string {
  const sum = (rows: string) =>
    `UPDATE lgsync_users u SET bytes = u.bytes + d.n * SIGN
       FROM (SELECT user_id, sum(${SIZES[table]}) AS n FROM ${rows} GROUP BY user_id) d
       WHERE u.user_id = d.user_id;`;
  // Statements on a transition table that a trigger does not declare are never run, so never planned.
  return `CREATE OR REPLACE FUNCTION ${table}_bytes_v${COUNTING_VERSION}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('INSERT', 'UPDATE') THEN ${sum("new_rows").replace("SIGN", "1")} END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') THEN ${sum("old_rows").replace("SIGN", "-1")} END IF;
      RETURN NULL;
    END $$`;
}

/**
 * One statement-level trigger per table and event (a transition table serves
 * one event only), in place of any older one. Looked for on the table
 * itself: trigger names are not unique across a database, and looked for by
 * name alone, the tables of a second schema (another server's, in the same
 * database) never got theirs.
 */
function triggers(table: Table): string {
  return EVENTS.map(
    ([suffix, event, transition]) =>
      `DROP TRIGGER IF EXISTS ${table}_bytes_${suffix} ON ${table};
       CREATE TRIGGER ${table}_bytes_${suffix} AFTER ${event} ON ${table}
         REFERENCING ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${table}_bytes_v${COUNTING_VERSION}();`,
  ).join("\n");
}

/** The schema's quota triggers (by name) and the counting version of the function each runs (1: unversioned). */
const INSTALLED = `SELECT coalesce(substring(p.proname FROM '_bytes_v([0-9]+)$')::int, 1) AS version
  FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
  WHERE t.tgrelid IN (${TABLES.map((table) => `'${table}'::regclass`).join(", ")})
  AND t.tgname IN (${TABLES.flatMap((table) => EVENTS.map(([suffix]) => `'${table}_bytes_${suffix}'`)).join(", ")})`;

/**
 * The statements that add the counter and its triggers; idempotent, run
 * after the tables exist, under setupSchema's lock. Where a trigger is
 * missing or runs an older version's counting (a database from before the
 * counter, or before this counting), every trigger is made anew and every
 * user counted again from the rows, once; where one runs a newer version's,
 * all is left to it.
 */
export const QUOTA_SCHEMA: readonly string[] = [
  ...TABLES.map(countingFunction),
  `DO $$ DECLARE newer int; current int; BEGIN
     IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                    AND table_name = 'lgsync_users' AND column_name = 'bytes') THEN
       ALTER TABLE lgsync_users ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
     END IF;
     SELECT count(*) FILTER (WHERE version > ${COUNTING_VERSION}), count(*) FILTER (WHERE version = ${COUNTING_VERSION})
       INTO newer, current FROM (${INSTALLED}) installed;
     IF newer = 0 AND current < ${TABLES.length * EVENTS.length} THEN
       ${TABLES.map(triggers).join("\n")}
       ${RECOUNT}
       -- An older version's functions, which nothing runs now (an older process makes them again: harmless).
       ${TABLES.map((table) => `DROP FUNCTION IF EXISTS ${table}_bytes();`).join("\n")}
     END IF;
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
