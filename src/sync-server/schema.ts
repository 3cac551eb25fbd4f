/**
 * The sync server's PostgreSQL tables. Every row carries `user_id`, the first
 * column of every primary key: a query is always scoped by the authenticated
 * user, never by anything the body says.
 *
 * Values are stored as the browser's serializer wrote them (`*_type` plus
 * `bytea`), so ciphertext stays ciphertext and plaintext round-trips byte for
 * byte. `seq` orders the user's change log: a checkpoint takes a new `seq`
 * when it is stored or gains writes, a tombstone when its thread is deleted.
 */
import type { Pool } from "pg";
import { APPS_SCHEMA } from "./apps.js";
import { QUOTA_SCHEMA } from "./quota.js";
import { UTF16_KEY_DEFINITION, UTF16_KEY_FUNCTION, transaction, utf16Key } from "./sql.js";

/**
 * A statement adding `column` to `table` only when it is missing: ALTER
 * TABLE takes an exclusive lock even when there is nothing to add, which
 * would make every start wait for (and hold up) the other processes'
 * transactions on the table. Names are this module's own literals.
 */
function addColumnIfMissing(table: string, column: string, type: string): string {
  return `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                    AND table_name = '${table}' AND column_name = '${column}') THEN
       ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${type};
     END IF;
   END $$`;
}

/**
 * A statement creating the index `name` only when it is missing: `CREATE
 * INDEX IF NOT EXISTS` takes a SHARE lock on the table before it looks for
 * the index, held to the start's commit. A push that wrote a tombstone and
 * then waited on the checkpoints so locked, while the start waited on the
 * tombstones, deadlocked with it (40P01: the push's 500, or a failed start)
 * during every rolling restart. Names are this module's own literals.
 */
function createIndexIfMissing(name: string, on: string): string {
  return `DO $$ BEGIN
     IF to_regclass('${name}') IS NULL THEN CREATE INDEX IF NOT EXISTS ${name} ON ${on}; END IF;
   END $$`;
}

/**
 * A statement creating a function by `definition` only when `signature`
 * names none: `CREATE OR REPLACE` at every start would rewrite the catalog
 * row (and wait on whoever holds it) for nothing. Names are this module's
 * own literals.
 */
function createFunctionIfMissing(signature: string, definition: string): string {
  return `DO $$ BEGIN
     IF to_regprocedure('${signature}') IS NULL THEN ${definition}; END IF;
   END $$`;
}

/** The statements that create the schema; idempotent, run by `setup()`. */
export const SYNC_SCHEMA: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS lgsync_users (
     user_id text PRIMARY KEY,
     seq bigint NOT NULL DEFAULT 0,
     key_record bytea
   )`,
  `CREATE TABLE IF NOT EXISTS lgsync_checkpoints (
     user_id text NOT NULL,
     thread_id text NOT NULL,
     checkpoint_ns text NOT NULL,
     checkpoint_id text NOT NULL,
     parent_checkpoint_id text,
     checkpoint_type text NOT NULL,
     checkpoint bytea NOT NULL,
     metadata_type text NOT NULL,
     metadata bytea NOT NULL,
     -- JSON text, not jsonb: jsonb reorders keys, and the browser row keeps them verbatim.
     channel_versions text NOT NULL,
     run_id text,
     seq bigint NOT NULL,
     -- The device whose push last changed the row: its own pulls skip it.
     origin text,
     PRIMARY KEY (user_id, thread_id, checkpoint_ns, checkpoint_id)
   )`,
  // The row's `chain` (row binding version 3), added by ALTER so that tables
  // created before it gain the column on the next start; NULL on older rows.
  addColumnIfMissing("lgsync_checkpoints", "chain", "text"),
  // The row's `parent_writes` (row binding version 4) as JSON text, added
  // the same way; NULL on older rows.
  addColumnIfMissing("lgsync_checkpoints", "parent_writes", "text"),
  createIndexIfMissing("lgsync_checkpoints_seq", "lgsync_checkpoints (user_id, seq)"),
  `CREATE TABLE IF NOT EXISTS lgsync_blobs (
     user_id text NOT NULL,
     thread_id text NOT NULL,
     checkpoint_ns text NOT NULL,
     channel text NOT NULL,
     version text NOT NULL,
     type text NOT NULL,
     value bytea NOT NULL,
     PRIMARY KEY (user_id, thread_id, checkpoint_ns, channel, version)
   )`,
  `CREATE TABLE IF NOT EXISTS lgsync_writes (
     user_id text NOT NULL,
     thread_id text NOT NULL,
     checkpoint_ns text NOT NULL,
     checkpoint_id text NOT NULL,
     task_id text NOT NULL,
     idx integer NOT NULL,
     channel text NOT NULL,
     task_path text NOT NULL,
     type text NOT NULL,
     value bytea NOT NULL,
     PRIMARY KEY (user_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
   )`,
  `CREATE TABLE IF NOT EXISTS lgsync_tombstones (
     user_id text NOT NULL,
     thread_id text NOT NULL,
     max_deleted_id text NOT NULL,
     seq bigint NOT NULL,
     PRIMARY KEY (user_id, thread_id)
   )`,
  createIndexIfMissing("lgsync_tombstones_seq", "lgsync_tombstones (user_id, seq)"),
  // Checkpoints removed by prune or deleteForRuns on a device: kept (ids only)
  // so that no later push brings one back, and pulled by every device.
  `CREATE TABLE IF NOT EXISTS lgsync_removed (
     user_id text NOT NULL,
     thread_id text NOT NULL,
     checkpoint_ns text NOT NULL,
     checkpoint_id text NOT NULL,
     seq bigint NOT NULL,
     origin text,
     PRIMARY KEY (user_id, thread_id, checkpoint_ns, checkpoint_id)
   )`,
  createIndexIfMissing("lgsync_removed_seq", "lgsync_removed (user_id, seq)"),
  ...QUOTA_SCHEMA,
  APPS_SCHEMA,
  // The user's thread ids in the devices' order, for /threads to walk a page's threads a step each
  // (reads.ts). Last: on a database of an older version, the build's SHARE lock on the checkpoints is
  // the last lock the start takes, so no push waits on it while holding what a later statement needs.
  createFunctionIfMissing(`${UTF16_KEY_FUNCTION}(text)`, UTF16_KEY_DEFINITION),
  createIndexIfMissing("lgsync_checkpoints_thread_order", `lgsync_checkpoints (user_id, ${utf16Key("thread_id")})`),
];

/**
 * Creates the tables if absent. Several server processes may start at once:
 * an advisory lock keeps their `CREATE ... IF NOT EXISTS` from racing on the
 * catalog (which PostgreSQL reports as a unique violation).
 */
export function setupSchema(pool: Pool): Promise<void> {
  return runSchemaStatements(pool, SYNC_SCHEMA);
}

/**
 * Runs `statements` as a server process's start runs its schema's: one
 * transaction, under the advisory lock every start takes (tests run an older
 * version's statements so, as its process would). In {@link transaction},
 * which listens to the connection: one the database dropped in the middle
 * (a restart, which a start that waits for its database then outlives)
 * ended the process.
 */
export function runSchemaStatements(pool: Pool, statements: readonly string[]): Promise<void> {
  return transaction(pool, "BEGIN", async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(7270451)");
    for (const statement of statements) await client.query(statement);
  });
}
