/**
 * A PostgreSQL schema of the calling test file's own on the test database,
 * for tests that change the tables' shape or locks (an upgrade, a rolling
 * restart): the other files' tables stay as they are. With `ownDatabase`, in
 * a database of the file's own: for tests of a `CREATE INDEX CONCURRENTLY`,
 * which waits out every transaction open in its database, the other files'
 * too.
 */
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { postgresUrl } from "./harness.js";

/** The schema and the pools on it; `admin` is set once the file's `beforeAll` ran. */
export interface OwnSchema {
  /** The schema's name. */
  readonly name: string;
  /** One connection on the database's default search path (which created the schema). */
  admin: pg.Pool;
  /** A pool whose search path is the schema, with `settings` (`-c name=value ...`) added; ended after the file. */
  pool(max: number, settings?: string): Promise<pg.Pool>;
}

/**
 * Creates a schema named after `label` before the file's tests, and drops
 * it after them (after the file's own `afterAll`s: they run in reverse).
 */
export function schemaForFile(label: string, { ownDatabase = false } = {}): OwnSchema {
  const pools: pg.Pool[] = [];
  const name = `lgsync_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  let url: string | undefined;
  let server: pg.Pool | undefined; // on the test database, to create and drop the file's own
  const own: OwnSchema = {
    name,
    admin: undefined as unknown as pg.Pool,
    async pool(max, settings = "") {
      const options = `-c search_path=${own.name} ${settings}`.trim();
      const pool = new pg.Pool({ connectionString: url ?? (await postgresUrl()), max, options });
      pools.push(pool);
      return pool;
    },
  };
  beforeAll(async () => {
    url = await postgresUrl();
    if (ownDatabase) {
      server = new pg.Pool({ connectionString: url, max: 1 });
      await server.query(`CREATE DATABASE ${name}`);
      const inOwn = new URL(url);
      inOwn.pathname = `/${name}`;
      url = inOwn.href;
    }
    own.admin = new pg.Pool({ connectionString: url, max: 1 });
    await own.admin.query(`CREATE SCHEMA ${own.name}`);
  }, 60_000);
  afterAll(async () => {
    for (const pool of pools.splice(0)) await pool.end().catch(() => undefined);
    if (server) {
      await own.admin?.end();
      // Not FORCE first: an ended pool's sessions are still closing, and one terminated mid-close emits an
      // error nobody listens to. PostgreSQL waits (5 s) for them to go; FORCE only for one left running.
      await server
        .query(`DROP DATABASE IF EXISTS ${name}`)
        .catch(() => server!.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      await server.end();
      return;
    }
    await own.admin?.query(`DROP SCHEMA IF EXISTS ${own.name} CASCADE`);
    await own.admin?.end();
  }, 30_000);
  return own;
}
