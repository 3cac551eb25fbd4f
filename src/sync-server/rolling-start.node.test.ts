/**
 * A server process starting (a rolling restart) beside one already serving
 * pushes on the same database. Its schema statements found everything there
 * and still took table locks: `CREATE INDEX IF NOT EXISTS` takes a SHARE
 * lock on the table before it looks for the index, held to the start's
 * commit. A push that had written a tombstone then waited on the
 * checkpoints the start held, while the start waited on the tombstones:
 * PostgreSQL broke the deadlock (40P01) by failing one of them, the push as
 * a 500 or the start. Runs in a schema of its own, like upgrade.node.test,
 * in a database of its own: a start on the version before the thread order
 * index builds it concurrently, which waits out every transaction open in
 * the database, the other test files' too.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser, wireCheckpoint } from "../../test/support/sync/harness.js";
import { schemaForFile } from "../../test/support/sync/own-schema.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, encodeBody } from "../sync/protocol.js";
import { createSyncServer, type SyncServer } from "./server.js";
import { setupSchema } from "./schema.js";
import { UTF16_KEY_FUNCTION } from "./sql.js";

const schema = schemaForFile("rolling", { ownDatabase: true });
let server: SyncServer;
let url: string;
let admin: pg.Pool;

beforeAll(async () => {
  admin = await schema.pool(1);
  server = await createSyncServer({ pool: await schema.pool(8), authenticate });
  url = await server.listen({ port: 0 });
}, 60_000);

afterAll(() => server?.close(), 30_000);

async function push(token: string, body: Record<string, unknown>): Promise<number> {
  const response = await fetch(`${url}/v1/push`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
    body: encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [], deletes: [], ...body }) as Uint8Array<ArrayBuffer>,
  });
  await response.arrayBuffer();
  return response.status;
}

describe("sync server: a process starting beside one serving pushes", () => {
  it("finds its schema there without waiting on a lock a push holds", async () => {
    // A push in flight: it has written to every table and not committed yet.
    const { user } = newUser("held");
    const held = await (await schema.pool(1)).connect();
    const starting = await schema.pool(1, "-c lock_timeout=3000");
    try {
      await held.query("BEGIN");
      await held.query("INSERT INTO lgsync_users (user_id) VALUES ($1)", [user]);
      await held.query(
        "INSERT INTO lgsync_tombstones (user_id, thread_id, max_deleted_id, seq) VALUES ($1, 'gone', '9', 1)",
        [user],
      );
      await held.query(
        `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
           metadata_type, metadata, channel_versions, seq) VALUES ($1, 't', '', '1', 'msgpack', '\\x80', 'msgpack', '\\x80', '{}', 2)`,
        [user],
      );
      await held.query(
        "INSERT INTO lgsync_removed (user_id, thread_id, checkpoint_ns, checkpoint_id, seq) VALUES ($1, 't', '', '0', 3)",
        [user],
      );
      await held.query(
        "INSERT INTO lgsync_blobs (user_id, thread_id, checkpoint_ns, channel, version, type, value) VALUES ($1, 't', '', 'c', '1', 'msgpack', '\\x80')",
        [user],
      );
      await held.query(
        `INSERT INTO lgsync_writes (user_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, type, value)
         VALUES ($1, 't', '', '1', 'task', 0, 'c', '', 'msgpack', '\\x80')`,
        [user],
      );
      // Before, the start waited for the push's commit (here: failed on the lock timeout, 55P03).
      await expect(setupSchema(starting)).resolves.toBeUndefined();
    } finally {
      await held.query("ROLLBACK");
      held.release();
    }
  });

  it.each([
    ["", false],
    [", each start on a database of the version before the thread order index", true],
  ])(
    "pushes with deletes meet no deadlock and no 500 while a second process starts several times%s",
    async (_, older) => {
      const workers = Array.from({ length: 4 }, (_, i) => ({ ...newUser(`stream${i}`), statuses: [] as number[] }));
      let running = true;
      const stream = Promise.all(
        workers.map(async (worker) => {
          for (let round = 0; running; round++) {
            const thread = `t${round}`;
            worker.statuses.push(
              await push(worker.token, { checkpoints: [wireCheckpoint(thread), wireCheckpoint(`k${round}`)] }),
            );
            worker.statuses.push(
              await push(worker.token, {
                deletes: [{ thread_id: thread, max_deleted_id: "1f0aaaaa-0000-6000-8000-000000000001" }],
                removed: [
                  { thread_id: `k${round}`, checkpoint_ns: "", checkpoint_id: "1f0aaaaa-0000-6000-8000-000000000001" },
                ],
                checkpoints: [wireCheckpoint(`n${round}`)],
              }),
            );
          }
        }),
      );
      const starts: string[] = [];
      try {
        for (let start = 0; start < 6; start++) {
          // The version before had neither: this start builds the index while the first process serves pushes.
          if (older)
            await admin.query(
              `DROP INDEX IF EXISTS lgsync_checkpoints_thread_order; DROP FUNCTION IF EXISTS ${UTF16_KEY_FUNCTION}(text)`,
            );
          const second = await schema.pool(2);
          try {
            const other = await createSyncServer({ pool: second, authenticate });
            await other.ready.then(
              () => starts.push("ready"),
              (error: Error & { code?: string }) => starts.push(`${error.code}: ${error.message}`),
            );
            await other.close();
          } catch (error) {
            starts.push(`${(error as { code?: string }).code}: ${(error as Error).message}`);
          }
          await new Promise((done) => setTimeout(done, 50));
        }
      } finally {
        running = false;
        await stream;
      }
      expect(starts).toEqual(Array(6).fill("ready"));
      const statuses = workers.flatMap((worker) => worker.statuses);
      expect(statuses.length).toBeGreaterThan(12);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      const listed = await fetch(`${url}/v1/threads?limit=5`, {
        headers: { authorization: `Bearer ${workers[0]!.token}` },
      });
      expect(listed.status).toBe(200);
      await listed.arrayBuffer();
    },
    60_000,
  );
});
