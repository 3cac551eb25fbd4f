/**
 * A PostgreSQL schema of the calling test file's own on the test database,
 * for tests that change the tables' shape or locks (an upgrade, a rolling
 * restart): the other files' tables stay as they are.
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
export function schemaForFile(label: string): OwnSchema {
  const pools: pg.Pool[] = [];
  const own: OwnSchema = {
    name: `lgsync_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`,
    admin: undefined as unknown as pg.Pool,
    async pool(max, settings = "") {
      const options = `-c search_path=${own.name} ${settings}`.trim();
      const pool = new pg.Pool({ connectionString: await postgresUrl(), max, options });
      pools.push(pool);
      return pool;
    },
  };
  beforeAll(async () => {
    own.admin = new pg.Pool({ connectionString: await postgresUrl(), max: 1 });
    await own.admin.query(`CREATE SCHEMA ${own.name}`);
  }, 60_000);
  afterAll(async () => {
    for (const pool of pools.splice(0)) await pool.end().catch(() => undefined);
    await own.admin?.query(`DROP SCHEMA IF EXISTS ${own.name} CASCADE`);
    await own.admin?.end();
  }, 30_000);
  return own;
}
