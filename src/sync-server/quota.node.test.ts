/**
 * The user quota counts every byte a push makes the server keep, not the
 * values alone: removal marks, tombstones, ids and channel versions too, so
 * no kind of push grows the tables without end. Real server on loopback,
 * real PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { inspector, newUser, startServer, storedBytes, wireCheckpoint } from "../../test/support/sync/harness.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  type PushRequest,
  type WireCheckpoint,
} from "../sync/protocol.js";
import type { SyncServer } from "../sync-server.js";

const QUOTA = 100_000;

describe("sync server: the quota counts what a push makes the server keep", () => {
  let server: SyncServer;
  let url = "";
  let pool: pg.Pool;
  beforeAll(async () => {
    ({ server, url } = await startServer({ limits: { maxUserBytes: QUOTA } }));
    pool = await inspector();
  }, 60_000);
  afterAll(async () => {
    await pool?.end();
    await server?.close();
  }, 30_000);

  const push = async (token: string, body: Partial<PushRequest>) => {
    const request: PushRequest = { v: SYNC_PROTOCOL_VERSION, checkpoints: [], deletes: [], ...body };
    const response = await fetch(`${url}/v1/push`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
      body: encodeBody(request) as Uint8Array<ArrayBuffer>,
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    const parsed: unknown = response.ok ? decodeBody(bytes) : JSON.parse(new TextDecoder().decode(bytes));
    return { status: response.status, body: parsed as Record<string, unknown> };
  };
  const stored = (user: string) => storedBytes(pool, user);
  const long = (label: string, i: number) => `${label}-${i}-`.padEnd(1000, "x");

  it("never refuses removals; past the quota it stores no mark of a checkpoint it never held", async () => {
    // Before, a mark was ids only, which the quota did not count: each push of 16 MiB of removals of
    // checkpoints that never existed stored its marks, 1,200 pushes a minute, whatever the quota. Then such
    // marks were refused past it (413), and a device resends every removal the server has not acknowledged
    // with every push: one holding more than the room left could never push again.
    const { user, token } = newUser("marks");
    const marks = (from: number) =>
      Array.from({ length: 40 }, (_, i) => ({
        thread_id: long("t", from + i),
        checkpoint_ns: "",
        checkpoint_id: long("c", from + i),
      }));
    expect((await push(token, { removed: marks(0) })).status).toBe(200); // 80 kB, within: kept
    const over = await push(token, { removed: marks(40) });
    expect(over.status).toBe(200);
    expect(over.body).toMatchObject({ removed: 40 });
    const held = await pool.query("SELECT 1 FROM lgsync_removed WHERE user_id = $1", [user]);
    expect(held.rowCount).toBe(40);
    const { counter, rows } = await stored(user);
    expect(counter).toBe(rows);
    expect(counter).toBe(80_000);
  });

  it("a device at the quota that deletes a thread recovers, whatever removals it resends", async () => {
    const { user, token } = newUser("stuck");
    const big = (threadId: string, checkpointId = "1f0aaaaa-0000-6000-8000-000000000001"): WireCheckpoint => ({
      ...wireCheckpoint(threadId, [], checkpointId),
      checkpoint: ["msgpack", new Uint8Array(45_000)],
    });
    expect((await push(token, { checkpoints: [big("t"), big("u")] })).status).toBe(200);
    // Refused: the device keeps v, then prunes its history (70 checkpoints the server never held), and
    // deletes thread t to make room. Its push carries the delete and the removals it has not had acknowledged.
    expect((await push(token, { checkpoints: [big("v")] })).status).toBe(413);
    const pruned = Array.from({ length: 70 }, (_, i) => ({
      thread_id: "v",
      checkpoint_ns: "",
      checkpoint_id: long("1f0aaaaa-pruned", i),
    }));
    const recovered = await push(token, { deletes: [{ thread_id: "t", max_deleted_id: "1f0aaaab" }], removed: pruned });
    expect(recovered.status).toBe(200);
    let { counter, rows } = await stored(user);
    expect(counter).toBe(rows);
    expect(counter).toBeLessThan(QUOTA);
    // And it pushes again: v fits now.
    expect((await push(token, { checkpoints: [big("v")] })).status).toBe(200);
    ({ counter, rows } = await stored(user));
    expect(counter).toBe(rows);
    expect(counter).toBeLessThanOrEqual(QUOTA);
  });

  it("takes the first batch of a device whose resent removals fit only without its checkpoints", async () => {
    // A device sends its deletes and removals with its first batch of checkpoints: marks that fit alone
    // but not beside the checkpoints made that batch refused, each round again.
    const { user, token } = newUser("batch");
    const big = (threadId: string): WireCheckpoint => ({
      ...wireCheckpoint(threadId),
      checkpoint: ["msgpack", new Uint8Array(45_000)],
    });
    expect((await push(token, { checkpoints: [big("t")] })).status).toBe(200);
    const removed = Array.from({ length: 20 }, (_, i) => ({
      thread_id: long("gone", i),
      checkpoint_ns: "",
      checkpoint_id: long("c", i),
    }));
    const first = await push(token, { removed, checkpoints: [big("v")] });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ changed: 1, removed: 20 });
    const { counter, rows } = await stored(user);
    expect(counter).toBe(rows);
    expect(counter).toBeLessThanOrEqual(QUOTA);
  });

  it("refuses tombstones past the quota: deletes of threads the server never held", async () => {
    const { user, token } = newUser("tombs");
    const deletes = (from: number) =>
      Array.from({ length: 40 }, (_, i) => ({ thread_id: long("t", from + i), max_deleted_id: long("c", from + i) }));
    expect((await push(token, { deletes: deletes(0) })).status).toBe(200);
    const over = await push(token, { deletes: deletes(40) });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ error: { code: "quota_exceeded" } });
    const held = await pool.query("SELECT 1 FROM lgsync_tombstones WHERE user_id = $1", [user]);
    expect(held.rowCount).toBe(40);
    const { counter, rows } = await stored(user);
    expect(counter).toBe(rows);
  });

  it("counts a checkpoint's ids and channel versions, not its values alone", async () => {
    // A checkpoint of 2 bytes of values with 67 kB of channel versions counted 2 bytes.
    const { user, token } = newUser("versions");
    const versions = (label: string): WireCheckpoint => ({
      ...wireCheckpoint(label),
      channel_versions: Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`channel-${i}`.padEnd(36, "v"), i])),
    });
    expect((await push(token, { checkpoints: [versions("a")] })).status).toBe(200);
    const over = await push(token, { checkpoints: [versions("b")] });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ error: { code: "quota_exceeded" } });
    const { counter, rows } = await stored(user);
    expect(counter).toBe(rows);
    expect(counter).toBeGreaterThan(QUOTA / 2);
  });

  it("still lets a user over the quota remove and delete what it holds, and keeps the counter exact", async () => {
    const { user, token } = newUser("frees");
    const big = (threadId: string, checkpointId: string): WireCheckpoint => ({
      ...wireCheckpoint(threadId, [], checkpointId),
      checkpoint: ["msgpack", new Uint8Array(45_000)],
    });
    const ids = ["1f0aaaaa-0000-6000-8000-000000000001", "1f0aaaaa-0000-6000-8000-000000000002"];
    expect((await push(token, { checkpoints: [big("t", ids[0]!), big("t", ids[1]!)] })).status).toBe(200);
    expect((await push(token, { checkpoints: [big("u", ids[0]!)] })).status).toBe(413);
    // A removal frees its checkpoint's row, more than its mark holds; a delete frees the rest of the thread.
    const removal = await push(token, { removed: [{ thread_id: "t", checkpoint_ns: "", checkpoint_id: ids[0]! }] });
    expect(removal.status).toBe(200);
    let { counter, rows } = await stored(user);
    expect(counter).toBe(rows);
    expect(counter).toBeLessThan(50_000);
    expect((await push(token, { deletes: [{ thread_id: "t", max_deleted_id: ids[1]! }] })).status).toBe(200);
    ({ counter, rows } = await stored(user));
    expect(counter).toBe(rows);
    expect(counter).toBeLessThan(1_000);
  });
});
