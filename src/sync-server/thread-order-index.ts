/**
 * The index `/threads` walks (`lgsync_checkpoints_thread_order`, reads.ts)
 * on a database an older version created: built with `CREATE INDEX
 * CONCURRENTLY` after the start's schema transaction committed. Built inside
 * it, it held a SHARE lock on the checkpoints until the start committed:
 * every push waited for the whole build (minutes on a large table), and the
 * starting server served nothing meanwhile. `/threads` answers the same
 * without the index, only slower, so the server serves at once and builds
 * it beside. (Where the start created the table, the start builds the index
 * itself: nobody can be waiting on a table no one else sees yet.)
 */
/// <reference types="node" />
import type pg from "pg";
import { utf16Key } from "./sql.js";

/** The index's name. */
export const THREAD_ORDER_INDEX = "lgsync_checkpoints_thread_order";

/** What the index is on. */
export const THREAD_ORDER_INDEX_ON = `lgsync_checkpoints (user_id, ${utf16Key("thread_id")})`;

/** A query answering `valid`: whether the index is there and valid (an interrupted concurrent build leaves it INVALID). */
export const THREAD_ORDER_INDEX_VALID = `SELECT coalesce((SELECT indisvalid FROM pg_index
  WHERE indexrelid = to_regclass('${THREAD_ORDER_INDEX}')), false) AS valid`;

/**
 * The session advisory lock a build holds: its first key, then the
 * checkpoints table's oid, so that servers on other schemas of the same
 * database build theirs at the same time. Not the schema transaction's key:
 * a start waiting on that would wait for a whole build.
 */
const BUILD_LOCK = "7270452, to_regclass('lgsync_checkpoints')::oid::integer";

/** What {@link ensureThreadOrderIndex} found or did. */
export type ThreadOrderIndexOutcome = "present" | "built" | "busy";

/**
 * Makes sure the valid index is there, on `client` (a session of its own,
 * in no transaction: `CONCURRENTLY` refuses one). An INVALID index, left by
 * a build that was interrupted (a process killed, a connection lost, a
 * server closed mid-build), is used by no query but still updated by every
 * write: it is dropped and built again. `"busy"` when another session holds
 * the build lock: that session builds it.
 */
export async function ensureThreadOrderIndex(client: pg.ClientBase): Promise<ThreadOrderIndexOutcome> {
  // Tried, never waited on: a session waiting in pg_advisory_lock holds a snapshot, which the build holding
  // the lock waits out before it ends (a deadlock).
  const { rows: locked } = await client.query<{ locked: boolean }>(
    `SELECT pg_try_advisory_lock(${BUILD_LOCK}) AS locked`,
  );
  if (!locked[0]!.locked) return "busy";
  try {
    const { rows } = await client.query<{ valid: boolean }>(THREAD_ORDER_INDEX_VALID);
    if (rows[0]!.valid) return "present";
    await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${THREAD_ORDER_INDEX}`);
    await client.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${THREAD_ORDER_INDEX} ON ${THREAD_ORDER_INDEX_ON}`);
    return "built";
  } finally {
    await client.query(`SELECT pg_advisory_unlock(${BUILD_LOCK})`);
  }
}

function ignore(): void {}

/**
 * One build of the index on a connection of its own (not a pooled one,
 * held for minutes), which a closing server stops at once.
 */
export class ThreadOrderIndexBuild {
  readonly #connect: () => pg.Client;
  #running: Promise<ThreadOrderIndexOutcome> | undefined;
  #client: pg.Client | undefined;
  #pid: number | undefined;
  #stopped = false;

  /**
   * @param connect Makes a new client on the server's database: the build's, and a short-lived one to
   * cancel it (the server's own, which a close destroys if the database stops answering).
   */
  constructor(connect: () => pg.Client) {
    this.#connect = connect;
  }

  /**
   * Builds the index unless another session is building it; resolves once
   * it is built (or found, or left to that session). Rejects with the
   * build's error, or when {@link stop} ended it.
   */
  run(): Promise<ThreadOrderIndexOutcome> {
    this.#running ??= this.#run();
    return this.#running;
  }

  async #run(): Promise<ThreadOrderIndexOutcome> {
    if (this.#stopped) throw new Error("The thread order index build was stopped.");
    const client = this.#connect();
    this.#client = client;
    client.on("error", ignore); // a lost connection fails the query below; nothing to crash
    try {
      await client.connect();
      this.#pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      // Not the pool's timeouts, meant for requests: a build waits out every open transaction and may take
      // minutes, and one cut short leaves an INVALID index that every write keeps up until the next start.
      await client.query("SET lock_timeout = 0; SET statement_timeout = 0");
      if (this.#stopped) throw new Error("The thread order index build was stopped.");
      return await ensureThreadOrderIndex(client);
    } finally {
      this.#pid = undefined;
      this.#client = undefined;
      await client.end().catch(ignore);
    }
  }

  /**
   * Stops a build in progress, which leaves at most an INVALID index (the
   * next start builds it again). Its connection is ended at once, and its
   * backend cancelled from a short-lived connection: a backend busy with a
   * statement reads nothing from its client until the statement ends. No
   * timer: a closing server must close under a test's fake timers too. A
   * build still connecting is not waited for (its database may not answer):
   * once connected it sees it was stopped and ends. Where the database
   * stops answering, the cancel waits on it too: the closing server bounds
   * that, destroying the connections it made (shutdown.ts).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    const [running, pid] = [this.#running, this.#pid];
    if (!running) return;
    void this.#client?.end().catch(ignore);
    if (pid === undefined) return;
    await Promise.all([running.catch(ignore), this.#cancel(pid)]);
  }

  async #cancel(pid: number): Promise<void> {
    const client = this.#connect();
    client.on("error", ignore);
    try {
      await client.connect();
      await client.query("SELECT pg_cancel_backend($1)", [pid]);
    } catch {
      // The database gone: so is the build.
    } finally {
      await client.end().catch(ignore);
    }
  }
}
