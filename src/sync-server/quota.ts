/**
 * The per-user byte quota. `lgsync_users.bytes` counts the bytes of values
 * a user stores (checkpoint and metadata bytes, channel values, pending
 * writes: what devices sent, ids and keys aside). Triggers on the three
 * tables keep it, one statement at a time, inside the transaction that
 * changes the rows, so the count is never ahead of or behind them whatever
 * path changed them (push, a thread's delete, a removal, a server-side
 * saver's writes). A push that leaves the user over the quota, and grew
 * them, rolls back whole.
 */
import type { PoolClient } from "pg";
import { SyncHttpError } from "./errors.js";
import { OWNER_OF_ROW, spaceOwner } from "./apps.js";

/** What each table's row costs against the quota. */
const SIZES = {
  lgsync_checkpoints: "octet_length(checkpoint) + octet_length(metadata)",
  lgsync_blobs: "octet_length(value)",
  lgsync_writes: "octet_length(value)",
} as const;

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
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                    AND table_name = 'lgsync_users' AND column_name = 'bytes') THEN
       ALTER TABLE lgsync_users ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
       UPDATE lgsync_users u SET bytes =
         coalesce((SELECT sum(${SIZES.lgsync_checkpoints}) FROM lgsync_checkpoints c WHERE c.user_id = u.user_id), 0)
         + coalesce((SELECT sum(${SIZES.lgsync_blobs}) FROM lgsync_blobs b WHERE b.user_id = u.user_id), 0)
         + coalesce((SELECT sum(${SIZES.lgsync_writes}) FROM lgsync_writes w WHERE w.user_id = u.user_id), 0);
     END IF;
     ${Object.keys(SIZES)
       .map((table) => triggers(table as keyof typeof SIZES))
       .join("\n")}
   END $$`,
];

/** The quota a server applies when its options name none: 1 GiB per user. */
export const DEFAULT_MAX_USER_BYTES = 1024 ** 3;

/**
 * Refuses (413 `quota_exceeded`, and the transaction rolls back) when the
 * user, across the spaces of all their apps, now stores more than `max`
 * bytes, and the space locked by the caller grew past `before`: a push that
 * frees space (a delete) goes through even over the quota, so a user over
 * it can always get back under.
 */
export async function assertWithinQuota(client: PoolClient, space: string, before: number, max: number): Promise<void> {
  const row = await client.query<{ own: string; bytes: string }>(
    `SELECT coalesce(sum(bytes) FILTER (WHERE user_id = $1), 0) AS own, coalesce(sum(bytes), 0) AS bytes
     FROM lgsync_users WHERE ${OWNER_OF_ROW} = $2`,
    [space, spaceOwner(space)],
  );
  const bytes = Number(row.rows[0]!.bytes);
  if (bytes > max && Number(row.rows[0]!.own) > before)
    throw new SyncHttpError(
      413,
      "quota_exceeded",
      `This push would store ${bytes} bytes for this user, over this server's quota of ${max} bytes per user; ` +
        "nothing of it was applied. Delete threads to free space, or ask the server's operator for a larger quota.",
    );
}
