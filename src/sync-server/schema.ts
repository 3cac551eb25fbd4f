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
import pg, { type Pool, type PoolClient } from "pg";
import { APPS_SCHEMA } from "./apps.js";
import { QUOTA_SCHEMA } from "./quota.js";
import { UTF16_KEY_DEFINITION, UTF16_KEY_FUNCTION, transaction } from "./sql.js";
import {
  THREAD_ORDER_INDEX,
  THREAD_ORDER_INDEX_ON,
  THREAD_ORDER_INDEX_VALID,
  ThreadOrderIndexBuild,
} from "./thread-order-index.js";

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

/**
 * The transaction's own setting saying whether `lgsync_checkpoints` was
 * missing when it began (so this transaction creates it).
 */
const NEW_CHECKPOINTS = "lgsync.new_checkpoints";

/**
 * The statements that create the schema; idempotent, run by `setupSchema()`
 * in one transaction. They create the index `lgsync_checkpoints_thread_order`
 * only with the table: on a table an older version created, it is built
 * after them, concurrently (thread-order-index.ts).
 */
export const SYNC_SCHEMA: readonly string[] = [
  `SELECT set_config('${NEW_CHECKPOINTS}', (to_regclass('lgsync_checkpoints') IS NULL)::text, true)`,
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
  // (reads.ts). Built here only on the table this transaction created, which nobody else can be writing:
  // on one an older version created, its SHARE lock held to the start's commit made every push wait for
  // the whole build. That one is built concurrently once the start committed (thread-order-index.ts).
  createFunctionIfMissing(`${UTF16_KEY_FUNCTION}(text)`, UTF16_KEY_DEFINITION),
  `DO $$ BEGIN
     IF current_setting('${NEW_CHECKPOINTS}', true) = 'true' AND to_regclass('${THREAD_ORDER_INDEX}') IS NULL THEN
       CREATE INDEX ${THREAD_ORDER_INDEX} ON ${THREAD_ORDER_INDEX_ON};
     END IF;
   END $$`,
];

/**
 * Creates the tables if absent, then builds the index
 * `lgsync_checkpoints_thread_order` concurrently where an older version's
 * table lacks it (or an interrupted build left it INVALID), unless another
 * session is building it. Several server processes may start at once: an
 * advisory lock keeps their `CREATE ... IF NOT EXISTS` from racing on the
 * catalog (which PostgreSQL reports as a unique violation). A server runs
 * the tables' part ({@link setupTables}) at start and builds the index
 * while it serves.
 */
export async function setupSchema(pool: Pool): Promise<void> {
  if (await setupTables(pool)) await new ThreadOrderIndexBuild(() => new pg.Client(pool.options)).run();
}

/**
 * The tables' part of {@link setupSchema}, its one transaction; resolves to
 * whether the thread order index is still to be built (concurrently).
 */
export function setupTables(pool: Pool): Promise<boolean> {
  return runSchemaStatements(pool, SYNC_SCHEMA, async (client) => {
    const { rows } = await client.query<{ valid: boolean }>(THREAD_ORDER_INDEX_VALID);
    return !rows[0]!.valid;
  });
}

/**
 * Runs `statements` as a server process's start runs its schema's: one
 * transaction, under the advisory lock every start takes (tests run an older
 * version's statements so, as its process would). In {@link transaction},
 * which listens to the connection: one the database dropped in the middle
 * (a restart, which a start that waits for its database then outlives)
 * ended the process.
 */
export function runSchemaStatements(pool: Pool, statements: readonly string[]): Promise<void>;
/** The same, then `after` in the same transaction; resolves to what it gives. */
export function runSchemaStatements<R>(
  pool: Pool,
  statements: readonly string[],
  after: (client: PoolClient) => Promise<R>,
): Promise<R>;
export function runSchemaStatements(
  pool: Pool,
  statements: readonly string[],
  after?: (client: PoolClient) => Promise<unknown>,
): Promise<unknown> {
  return transaction(pool, "BEGIN", async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(7270451)");
    for (const statement of statements) await client.query(statement);
    return after?.(client);
  });
}
