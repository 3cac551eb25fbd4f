/**
 * The quota statements a sync server process of commit 0808d58 (values-only
 * counting, before ids, marks and tombstones counted) runs at every start,
 * as its `QUOTA_SCHEMA` made them: what an older process started during a
 * rolling deploy runs against a database a newer one already set up. Kept
 * verbatim, as that code wrote them, so tests can run them.
 */

/** What each table's row cost against the quota then: values alone. */
const SIZES = {
  lgsync_checkpoints: "octet_length(checkpoint) + octet_length(metadata)",
  lgsync_blobs: "octet_length(value)",
  lgsync_writes: "octet_length(value)",
} as const;

type Table = keyof typeof SIZES;
const TABLES = Object.keys(SIZES) as Table[];

function countingFunction(table: Table): string {
  const sum = (rows: string) =>
    `UPDATE lgsync_users u SET bytes = u.bytes + d.n * SIGN
       FROM (SELECT user_id, sum(${SIZES[table]}) AS n FROM ${rows} GROUP BY user_id) d
       WHERE u.user_id = d.user_id;`;
  return `CREATE OR REPLACE FUNCTION ${table}_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('INSERT', 'UPDATE') THEN ${sum("new_rows").replace("SIGN", "1")} END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') THEN ${sum("old_rows").replace("SIGN", "-1")} END IF;
      RETURN NULL;
    END $$`;
}

function triggers(table: Table): string {
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

/** The statements, in the order that process runs them (under the same advisory lock as today's). */
export const VALUES_ONLY_QUOTA_SCHEMA: readonly string[] = [
  ...TABLES.map(countingFunction),
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                    AND table_name = 'lgsync_users' AND column_name = 'bytes') THEN
       ALTER TABLE lgsync_users ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
       UPDATE lgsync_users u SET bytes =
         coalesce((SELECT sum(${SIZES.lgsync_checkpoints}) FROM lgsync_checkpoints c WHERE c.user_id = u.user_id), 0)
         + coalesce((SELECT sum(${SIZES.lgsync_blobs}) FROM lgsync_blobs b WHERE b.user_id = u.user_id), 0)
         + coalesce((SELECT sum(${SIZES.lgsync_writes}) FROM lgsync_writes w WHERE w.user_id = u.user_id), 0);
     END IF;
     ${TABLES.map(triggers).join("\n")}
   END $$`,
];
