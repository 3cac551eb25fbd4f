/**
 * Checkpoint ids are compared as devices compare them: by UTF-16 code unit
 * (JavaScript's `<`, IndexedDB's key order), not by code point, which is
 * how PostgreSQL's "C" collation orders text. The two differ where an id
 * holds a character above U+FFFF (a surrogate pair, 0xD800-0xDBFF first)
 * and another holds one of U+E000-U+FFFF at the same place. Real server on
 * loopback, real PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import type pg from "pg";
import { inspector, newUser, startServer, wireCheckpoint } from "../../test/support/sync/harness.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  type PullResponse,
  type PushRequest,
  type ThreadsResponse,
} from "../sync/protocol.js";
import type { SyncServer } from "../sync-server.js";

/** Below `HIGH` for a device (0xD83D < 0xE000), above it by code point (U+1F600 > U+E000). */
const ASTRAL = "1f0aaaaa-\u{1F600}";
const HIGH = "1f0aaaaa-\uE000";

describe("sync server: checkpoint ids in the devices' order", () => {
  let server: SyncServer;
  let url = "";
  let pool: pg.Pool;
  beforeAll(async () => {
    ({ server, url } = await startServer());
    pool = await inspector();
  }, 60_000);
  afterAll(async () => {
    await pool?.end();
    await server?.close();
  }, 30_000);

  const call = async (token: string, method: string, path: string, body?: Partial<PushRequest>) => {
    const response = await fetch(`${url}/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
      body:
        body === undefined
          ? undefined
          : (encodeBody({
              v: SYNC_PROTOCOL_VERSION,
              checkpoints: [],
              deletes: [],
              ...body,
            }) as Uint8Array<ArrayBuffer>),
    });
    expect(response.status, `${method} ${path}`).toBe(200);
    return decodeBody(new Uint8Array(await response.arrayBuffer())) as Record<string, unknown>;
  };
  const held = async (user: string) =>
    (
      await pool.query<{ checkpoint_id: string }>(
        "SELECT checkpoint_id FROM lgsync_checkpoints WHERE user_id = $1 AND thread_id = 't' ORDER BY checkpoint_id",
        [user],
      )
    ).rows.map((row) => row.checkpoint_id);
  const write = {
    task_id: "k",
    idx: 0,
    channel: "c",
    task_path: "",
    value: ["msgpack", new Uint8Array([1])] as [string, Uint8Array],
  };

  it("a delete up to a device's newest id removes every checkpoint below it, for every device", async () => {
    // Before, the server deleted `checkpoint_id <= max` in "C" order: the device's older checkpoint ASTRAL sorts
    // after HIGH there, so it stayed on the server, and every other device (and a new one) pulled it back.
    const { user, token } = newUser("astral");
    await call(token, "POST", "/push", {
      checkpoints: [wireCheckpoint("t", [write], ASTRAL), wireCheckpoint("t", [write], HIGH)],
    });
    await call(token, "POST", "/push", { deletes: [{ thread_id: "t", max_deleted_id: HIGH }] });
    expect(await held(user)).toEqual([]);
    const writes = await pool.query("SELECT 1 FROM lgsync_writes WHERE user_id = $1", [user]);
    expect(writes.rowCount).toBe(0);
    const pulled = (await call(token, "GET", "/pull?since=0&device=new")) as unknown as PullResponse;
    expect(pulled.changes.filter((change) => change.kind === "checkpoint")).toEqual([]);
  });

  it("a later delete with a higher id raises the tombstone, and a push below it is dropped", async () => {
    // Before, HIGH did not raise a tombstone at ASTRAL ("C" order), so HIGH's checkpoint stayed, was pulled
    // again by every device, and the tombstone devices pull still said ASTRAL.
    const { user, token } = newUser("raise");
    await call(token, "POST", "/push", { checkpoints: [wireCheckpoint("t", [], ASTRAL)] });
    await call(token, "POST", "/push", { deletes: [{ thread_id: "t", max_deleted_id: ASTRAL }] });
    await call(token, "POST", "/push", { checkpoints: [wireCheckpoint("t", [], HIGH)] });
    await call(token, "POST", "/push", { deletes: [{ thread_id: "t", max_deleted_id: HIGH }] });
    const tombstone = await pool.query<{ max_deleted_id: string }>(
      "SELECT max_deleted_id FROM lgsync_tombstones WHERE user_id = $1 AND thread_id = 't'",
      [user],
    );
    expect(tombstone.rows.map((row) => row.max_deleted_id)).toEqual([HIGH]);
    expect(await held(user)).toEqual([]);
    // A device that had not seen the deletes pushes ASTRAL again: below the tombstone, dropped.
    const again = await call(token, "POST", "/push", { checkpoints: [wireCheckpoint("t", [], ASTRAL)] });
    expect(again).toMatchObject({ dropped: 1 });
    expect(await held(user)).toEqual([]);
  });

  it("a server-side agent's deleteThread names the newest id as devices see it", async () => {
    const { user, token } = newUser("agent");
    await call(token, "POST", "/push", {
      checkpoints: [wireCheckpoint("t", [], HIGH), wireCheckpoint("t", [], ASTRAL)],
    });
    await server.saverFor(user).deleteThread("t");
    expect(await held(user)).toEqual([]);
    const tombstone = await pool.query<{ max_deleted_id: string }>(
      "SELECT max_deleted_id FROM lgsync_tombstones WHERE user_id = $1",
      [user],
    );
    expect(tombstone.rows.map((row) => row.max_deleted_id)).toEqual([HIGH]);
  });

  it("a server-side agent's list and getTuple put ids in the devices' order, newest first", async () => {
    // Before, the saver ordered (and cut at `before`) by code point ("C"): ASTRAL came first, as the newest,
    // where every device lists HIGH first, so an agent on the server resumed a thread from an older checkpoint.
    const { user } = newUser("list");
    const OLDER = "1f0aaaaa-\uD7FF";
    const saver = server.saverFor(user);
    for (const id of [HIGH, ASTRAL, OLDER])
      await saver.put(
        { configurable: { thread_id: "t", checkpoint_ns: "" } },
        { ...emptyCheckpoint(), id },
        { source: "input", step: -1, parents: {} },
        {},
      );
    const ids = async (options: Parameters<typeof saver.list>[1] = {}) => {
      const listed: string[] = [];
      for await (const tuple of saver.list({ configurable: { thread_id: "t" } }, options))
        listed.push(tuple.checkpoint.id);
      return listed;
    };
    const devices = [HIGH, ASTRAL, OLDER].sort().reverse();
    expect(devices).toEqual([HIGH, ASTRAL, OLDER]);
    expect(await ids()).toEqual(devices);
    expect(await ids({ limit: 1 })).toEqual([HIGH]);
    expect(await ids({ before: { configurable: { checkpoint_id: HIGH } } })).toEqual([ASTRAL, OLDER]);
    expect(await ids({ before: { configurable: { checkpoint_id: ASTRAL } } })).toEqual([OLDER]);
    expect((await saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id).toBe(HIGH);
    // And the thread's newest id in the list of threads, which was ASTRAL as well.
    const listed = (await call(`token-of-${user}`, "GET", "/threads")) as unknown as ThreadsResponse;
    expect(listed.threads.map((thread) => thread.latest_checkpoint_id)).toEqual([HIGH]);
  });

  it("pages the list of threads in the devices' order, every thread once", async () => {
    // Before, /threads ordered and cut pages at `after` by PostgreSQL's collation: by code point in "C", so
    // a thread id holding U+E000-U+FFFF came after one holding a character above U+FFFF at the same place,
    // where every device puts it before; in a database of another default collation, by its own rules.
    const { token } = newUser("thread-pages");
    const ids = [`t-${ASTRAL}`, `t-${HIGH}`, "t-\uFFFD", "t-\u{10FFFF}", "t-a", "t-B", "t-\uD7FF", "t-\u{1F600}z"];
    await call(token, "POST", "/push", { checkpoints: ids.map((id) => wireCheckpoint(id)) });
    const devices = [...ids].sort();
    for (const limit of [1, 2, 3]) {
      const listed: string[] = [];
      let after: string | undefined;
      do {
        const query = `?limit=${limit}${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`;
        const page = (await call(token, "GET", `/threads${query}`)) as unknown as ThreadsResponse;
        listed.push(...page.threads.map((thread) => thread.thread_id));
        after = page.next;
      } while (after !== undefined && listed.length <= ids.length);
      expect(listed).toEqual(devices);
    }
    const whole = (await call(token, "GET", "/threads")) as unknown as ThreadsResponse;
    expect(whole.threads.map((thread) => thread.thread_id)).toEqual(devices);
  });
});
