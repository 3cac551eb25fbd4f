/**
 * A sync server database created before rows carried a `chain` (row binding
 * version 3) upgrades on the next start: the server adds the column, keeps
 * the rows already there (they pull back without a chain), and stores and
 * returns the chain of rows pushed from then on. Runs in a schema of its own
 * on the test PostgreSQL, so the other tests' tables stay as they are. The
 * old tables are today's less the column (dropped), whichever statement
 * creates it. And the quota's triggers, set up per schema.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl, storedBytes } from "../../test/support/sync/harness.js";
import { schemaForFile } from "../../test/support/sync/own-schema.js";
import { VALUES_ONLY_QUOTA_SCHEMA } from "../../test/support/sync/old-quota-schema.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  type PullResponse,
  type PushResponse,
} from "../sync/protocol.js";
import { createSyncServer, type SyncServer } from "./server.js";
import { runSchemaStatements, setupSchema } from "./schema.js";

const CHAIN = "0123456789abcdef".repeat(4);

const own = schemaForFile("upgrade");
const schemaName = own.name;
let admin: pg.Pool;
let pool: pg.Pool;
let server: SyncServer | undefined;

beforeAll(async () => {
  admin = own.admin;
  pool = await own.pool(4);
}, 60_000);

afterAll(() => server?.close(), 30_000);

const bundle = (id: string, fields: Record<string, unknown> = {}) => ({
  thread_id: "t",
  checkpoint_ns: "",
  checkpoint_id: id,
  checkpoint: ["msgpack+aes-gcm", new Uint8Array([1, 2, 3])],
  metadata: ["msgpack+aes-gcm", new Uint8Array([4])],
  channel_versions: {},
  blobs: [],
  writes: [],
  ...fields,
});

describe("sync server schema upgrade: the chain column", () => {
  it("a database without the column gains it on start, keeps its rows, and stores pushed chains", async () => {
    // The tables as a server before the column left them: today's, less the column.
    await setupSchema(pool);
    const { user, token } = newUser("upgrade");
    // A row the old server stored (before the column goes: today's quota triggers count it).
    await pool.query("INSERT INTO lgsync_users (user_id, seq) VALUES ($1, 1)", [user]);
    await pool.query(
      `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
         metadata_type, metadata, channel_versions, seq)
       VALUES ($1, 't', '', '1', 'msgpack+aes-gcm', '\\x010203', 'msgpack+aes-gcm', '\\x04', '{}', 1)`,
      [user],
    );
    await pool.query("ALTER TABLE lgsync_checkpoints DROP COLUMN chain");
    const columns = async () =>
      (
        await pool.query<{ column_name: string }>(
          "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'lgsync_checkpoints'",
          [schemaName],
        )
      ).rows.map((row) => row.column_name);
    expect(await columns()).not.toContain("chain");

    server = await createSyncServer({ pool, authenticate });
    const url = await server.listen({ port: 0 });
    expect(await columns()).toContain("chain");
    await setupSchema(pool); // a second start, or a second process: still fine

    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${url}/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
        body: body === undefined ? undefined : (encodeBody(body) as Uint8Array<ArrayBuffer>),
      });
      expect(response.status, `${method} ${path}`).toBe(200);
      return decodeBody(new Uint8Array(await response.arrayBuffer()));
    };
    const pushed = (await call("POST", "/push", {
      v: SYNC_PROTOCOL_VERSION,
      deletes: [],
      checkpoints: [bundle("2", { parent_checkpoint_id: "1", chain: CHAIN })],
    })) as PushResponse;
    expect(pushed).toMatchObject({ changed: 1, seq: 2 });

    const pulled = (await call("GET", "/pull?since=0")) as PullResponse;
    const got = pulled.changes.map((change) => (change.kind === "checkpoint" ? change.checkpoint : undefined));
    expect(got.map((cp) => cp?.checkpoint_id)).toEqual(["1", "2"]);
    expect("chain" in got[0]!).toBe(false); // the old row: binding version 1/2
    expect(got[1]).toMatchObject({ parent_checkpoint_id: "1", chain: CHAIN });
  });
});

describe("sync server schema upgrade: the quota's counter", () => {
  it("a counter of values alone (before ids, marks and tombstones counted) is counted again from the rows, once", async () => {
    await setupSchema(pool);
    const { user } = newUser("recount");
    await pool.query("INSERT INTO lgsync_users (user_id, seq) VALUES ($1, 3)", [user]);
    await pool.query(
      `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
         metadata_type, metadata, channel_versions, seq)
       VALUES ($1, 'thread', '', 'id-1', 'msgpack', '\\x010203', 'msgpack', '\\x04', '{"messages":1}', 1)`,
      [user],
    );
    await pool.query(
      "INSERT INTO lgsync_removed (user_id, thread_id, checkpoint_ns, checkpoint_id, seq) VALUES ($1, 'r', '', 'id-r', 2)",
      [user],
    );
    await pool.query(
      "INSERT INTO lgsync_tombstones (user_id, thread_id, max_deleted_id, seq) VALUES ($1, 'gone', 'id-9', 3)",
      [user],
    );
    const bytes = async () =>
      Number(
        (await pool.query<{ bytes: string }>("SELECT bytes FROM lgsync_users WHERE user_id = $1", [user])).rows[0]!
          .bytes,
      );
    // thread 6 + ns 0 + id 4 + types 7 + 7 + values 3 + 1 + versions 14; mark 1 + 4; tombstone 4 + 4.
    expect(await bytes()).toBe(42 + 5 + 8);
    // What a server before left: the values alone counted, no trigger on the marks' and tombstones' tables.
    await pool.query("UPDATE lgsync_users SET bytes = 4 WHERE user_id = $1", [user]);
    for (const table of ["lgsync_removed", "lgsync_tombstones"])
      for (const suffix of ["ins", "upd", "del"]) await pool.query(`DROP TRIGGER ${table}_bytes_${suffix} ON ${table}`);
    await setupSchema(pool);
    expect(await bytes()).toBe(55);
    // Once: a later start leaves the counter to the triggers.
    await pool.query("UPDATE lgsync_users SET bytes = 7 WHERE user_id = $1", [user]);
    await setupSchema(pool);
    expect(await bytes()).toBe(7);
  });
});

describe("sync server schema: two servers' schemas in one database", () => {
  it("each schema gets its own quota triggers, so each counter counts", async () => {
    // Before, a trigger was looked for by name across the database: the tables of a second schema (a
    // staging server beside production, say) never got theirs, and its users' quota never counted a byte.
    await setupSchema(admin); // the default schema's tables and triggers, first
    const other = `${schemaName}_b`;
    await admin.query(`CREATE SCHEMA ${other}`);
    const second = new pg.Pool({ connectionString: await postgresUrl(), max: 1, options: `-c search_path=${other}` });
    try {
      await setupSchema(second);
      const { user } = newUser("second-schema");
      await second.query("INSERT INTO lgsync_users (user_id, seq) VALUES ($1, 1)", [user]);
      await second.query(
        `INSERT INTO lgsync_blobs (user_id, thread_id, checkpoint_ns, channel, version, type, value)
         VALUES ($1, 't', '', 'c', '1', 'msgpack', '\\x0102')`,
        [user],
      );
      const { rows } = await second.query<{ bytes: string }>("SELECT bytes FROM lgsync_users WHERE user_id = $1", [
        user,
      ]);
      expect(Number(rows[0]!.bytes)).toBe(1 + 0 + 1 + 1 + 7 + 2);
    } finally {
      await second.end();
      await admin.query(`DROP SCHEMA IF EXISTS ${other} CASCADE`);
    }
  });
});

describe("sync server schema: processes of different versions on one database (a rolling deploy)", () => {
  /** An older process's start: its statements, as it ran them. */
  const start = (statements: readonly string[]) => runSchemaStatements(pool, statements);
  /** The function each quota trigger of this schema runs, by trigger name. */
  const counting = async () =>
    (
      await pool.query<{ tgname: string; proname: string }>(
        `SELECT t.tgname, p.proname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
         JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = $1::regnamespace AND t.tgname LIKE '%\\_bytes\\_%'
         ORDER BY t.tgname`,
        [schemaName],
      )
    ).rows;

  it("an older process started after the upgrade cannot put values-only counting back", async () => {
    // Before, its `CREATE OR REPLACE FUNCTION lgsync_checkpoints_bytes()` replaced the very function today's
    // triggers ran: from then on ids, channel versions and pending writes' ids went uncounted, rows stored
    // before were taken away at less than they had added, and the counter drifted from the rows.
    await setupSchema(pool);
    await start(VALUES_ONLY_QUOTA_SCHEMA);
    const { user } = newUser("rolling");
    await pool.query("INSERT INTO lgsync_users (user_id, seq) VALUES ($1, 1)", [user]);
    await pool.query(
      `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
         metadata_type, metadata, channel_versions, seq)
       VALUES ($1, 'thread', '', 'id-1', 'msgpack', '\\x010203', 'msgpack', '\\x04', '{"messages":1}', 1),
              ($1, 'thread', '', 'id-2', 'msgpack', '\\x05', 'msgpack', '\\x06', '{"messages":2}', 1)`,
      [user],
    );
    await pool.query(
      `INSERT INTO lgsync_writes (user_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, type, value)
       VALUES ($1, 'thread', '', 'id-1', 'task', 0, 'messages', '', 'msgpack', '\\x0708')`,
      [user],
    );
    await pool.query(
      "INSERT INTO lgsync_removed (user_id, thread_id, checkpoint_ns, checkpoint_id, seq) VALUES ($1, 'thread', '', 'id-0', 2)",
      [user],
    );
    await pool.query("DELETE FROM lgsync_checkpoints WHERE user_id = $1 AND checkpoint_id = 'id-2'", [user]);
    let { counter, rows } = await storedBytes(pool, user);
    expect(counter).toBe(rows);
    expect(counter).toBe(42 + 31 + 10);
    // Today's process starting again, then the older one again: still so.
    await setupSchema(pool);
    await start(VALUES_ONLY_QUOTA_SCHEMA);
    await pool.query("DELETE FROM lgsync_writes WHERE user_id = $1", [user]);
    ({ counter, rows } = await storedBytes(pool, user));
    expect(counter).toBe(rows);
    expect(counter).toBe(42 + 10);
  });

  it("leaves the triggers of a newer version as they are", async () => {
    await setupSchema(pool);
    const current = await counting();
    expect(current).toHaveLength(15);
    // A newer process's counting: functions of a higher version, the triggers made to run them.
    for (const { tgname, proname } of current) {
      const table = tgname.replace(/_bytes_(ins|upd|del)$/, "");
      const newer = proname.replace(/_v\d+$/, "_v99");
      await pool.query(`CREATE OR REPLACE FUNCTION ${newer}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RETURN NULL; END $$`);
      const event = tgname.endsWith("_ins") ? "INSERT" : tgname.endsWith("_upd") ? "UPDATE" : "DELETE";
      await pool.query(`DROP TRIGGER ${tgname} ON ${table}`);
      await pool.query(
        `CREATE TRIGGER ${tgname} AFTER ${event} ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${newer}()`,
      );
    }
    await setupSchema(pool);
    expect((await counting()).every(({ proname }) => proname.endsWith("_v99"))).toBe(true);
  });
});
