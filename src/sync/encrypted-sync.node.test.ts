/**
 * End-to-end encryption through the sync server: the server holds only
 * ciphertext (no plaintext marker anywhere in its tables), and a second
 * device with the same passphrase reads everything.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { chat, chatGraph, plain } from "../../test/support/chat-graph.js";
import { DecryptionError } from "../core/errors.js";
import type { IndexedDBSaver } from "../saver/index.js";
import { checkpointIds, device, inspector, newUser, state, serverForFile } from "../../test/support/sync/harness.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";

let pool: pg.Pool;

const served = serverForFile();

beforeAll(async () => {
  pool = await inspector();
}, 60_000);

afterAll(async () => {
  await pool?.end();
}, 30_000);

const SALT = "sync-test-salt-0001";
const ITERATIONS = 1000; // tests only: the default is 600,000
const MARKER = "PLAINTEXT-MARKER-7f3a9c";

const passphrase = (p: string) =>
  EncryptedSerializer.fromPassphrase(p, { salt: SALT, iterations: ITERATIONS, insecureTestOnlyWeakKdf: true });

/** Every byte the server stores for a user, as one buffer per row value. */
async function serverBytes(user: string): Promise<Buffer[]> {
  const out: Buffer[] = [];
  const queries = [
    "SELECT checkpoint AS v FROM lgsync_checkpoints WHERE user_id = $1",
    "SELECT metadata AS v FROM lgsync_checkpoints WHERE user_id = $1",
    "SELECT convert_to(channel_versions, 'UTF8') AS v FROM lgsync_checkpoints WHERE user_id = $1",
    "SELECT value AS v FROM lgsync_blobs WHERE user_id = $1",
    "SELECT value AS v FROM lgsync_writes WHERE user_id = $1",
    "SELECT key_record AS v FROM lgsync_users WHERE user_id = $1",
  ];
  for (const query of queries)
    for (const row of (await pool.query<{ v: Buffer | null }>(query, [user])).rows) if (row.v) out.push(row.v);
  return out;
}

describe("encrypted sync", () => {
  it("the server stores no plaintext; B reads everything with the passphrase", async () => {
    const { user, token } = newUser("e2e");
    const a = device(served.url, token, { serde: await passphrase("correct horse") });
    await chat(a.saver, "private", [`my ${MARKER} secret`, "second turn"]);
    await a.sync.syncNow();

    const stored = await serverBytes(user);
    expect(stored.length).toBeGreaterThan(5);
    // The check is real: the same search finds the marker in a plaintext user's rows.
    for (const value of stored) expect(value.includes(MARKER)).toBe(false);
    const types = await pool.query<{ type: string }>("SELECT DISTINCT type FROM lgsync_blobs WHERE user_id = $1", [
      user,
    ]);
    expect(types.rows.map((r) => r.type).every((t) => t.endsWith("+aes-gcm"))).toBe(true);

    const b = device(served.url, token, { serde: await passphrase("correct horse") });
    await b.sync.syncNow();
    expect(await state(b.saver, "private")).toEqual(await state(a.saver, "private"));
    expect((await state(b.saver, "private")).messages[0]).toEqual(["human", `my ${MARKER} secret`]);
    expect(await checkpointIds(b.saver, "private")).toEqual(await checkpointIds(a.saver, "private"));

    // B writes, A reads: both directions under the one data key.
    await chat(b.saver, "private", ["from B"]);
    await b.sync.syncNow();
    await a.sync.syncNow();
    expect(await state(a.saver, "private")).toEqual(await state(b.saver, "private"));

    // A wrong passphrase is refused before the record or any row is stored.
    const c = device(served.url, token, { serde: await passphrase("wrong") });
    await expect(c.sync.syncNow()).rejects.toMatchObject({ code: "key_mismatch", retryable: false });
    await expect(c.sync.syncNow()).rejects.toThrow(/Wrong passphrase or key/);
    expect(await checkpointIds(c.saver, "private")).toEqual([]);

    // A plaintext saver is refused, and so is an encrypted database that made its own key first.
    const plain = device(served.url, token);
    await expect(plain.sync.syncNow()).rejects.toMatchObject({ code: "encrypted_user", retryable: false });
    const early = device(served.url, token, { serde: await passphrase("correct horse") });
    await chat(early.saver, "x", ["written before the first sync"]);
    await expect(early.sync.syncNow()).rejects.toMatchObject({ code: "key_mismatch" });
    for (const d of [a, b, c, plain, early]) {
      d.sync.close();
      await d.saver.close();
    }
  });

  it("the marker search finds plaintext when there is some", async () => {
    const { user, token } = newUser("plain");
    const a = device(served.url, token);
    await chat(a.saver, "open", [`my ${MARKER} secret`]);
    await a.sync.syncNow();
    expect((await serverBytes(user)).some((value) => value.includes(MARKER))).toBe(true);
    const encrypted = device(served.url, token, { serde: await passphrase("p") });
    await expect(encrypted.sync.syncNow()).rejects.toMatchObject({ code: "plaintext_user" });
    for (const d of [a, encrypted]) {
      d.sync.close();
      await d.saver.close();
    }
  });

  it("row binding version 4 travels: B walks A's delta history; writes of an earlier step the server drops fail closed on C", async () => {
    const { user, token } = newUser("e2e-v4");
    const serde = await passphrase("correct horse");
    const a = device(served.url, token, { serde });
    await chat(a.saver, "delta", ["one", "two", "three"], true);
    await a.sync.syncNow();
    const b = device(served.url, token, { serde: await passphrase("correct horse") });
    await b.sync.syncNow();
    /** Every snapshot's messages, newest first (each walks the delta channel). */
    const history = async (saver: IndexedDBSaver) => {
      const out: [string, string][][] = [];
      const graph = chatGraph(saver, true);
      for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: "delta" } }))
        out.push(plain(snapshot.values.messages));
      return out;
    };
    const honest = await history(a.saver);
    expect(await history(b.saver)).toEqual(honest);
    const lists = await pool.query<{ parent_writes: string | null }>(
      "SELECT parent_writes FROM lgsync_checkpoints WHERE user_id = $1",
      [user],
    );
    expect(lists.rows.every((row) => row.parent_writes !== null)).toBe(true);
    expect(lists.rows.some((row) => JSON.parse(row.parent_writes!).length > 0)).toBe(true);
    // A server that drops an earlier step's writes to the delta channel (it holds no key).
    const oldest = await pool.query<{ checkpoint_id: string }>(
      `SELECT checkpoint_id FROM lgsync_writes WHERE user_id = $1 AND channel = 'messages'
       AND checkpoint_id IN (SELECT parent_checkpoint_id FROM lgsync_checkpoints WHERE user_id = $1)
       ORDER BY checkpoint_id LIMIT 1`,
      [user],
    );
    const dropped = await pool.query(
      "DELETE FROM lgsync_writes WHERE user_id = $1 AND checkpoint_id = $2 AND channel = 'messages'",
      [user, oldest.rows[0]!.checkpoint_id],
    );
    expect(dropped.rowCount).toBeGreaterThan(0);
    const c = device(served.url, token, { serde: await passphrase("correct horse") });
    await c.sync.syncNow();
    await expect(history(c.saver)).rejects.toBeInstanceOf(DecryptionError);
    for (const d of [a, b, c]) {
      d.sync.close();
      await d.saver.close();
    }
  });
});
