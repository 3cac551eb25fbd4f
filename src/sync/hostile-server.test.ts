/**
 * A hostile sync server, or a man-in-the-middle on plain http: it answers
 * the client's pulls with rows of its choosing. The server is trusted only
 * for availability, so the client must refuse rows no honest server sends
 * (the saver's own rows under the reserved namespace, malformed bundles)
 * before anything is written. Runs without PostgreSQL: the "server" is a
 * fetch function. Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { KEY_ID_WRITE_KEY } from "../rows/shapes.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { SyncClient } from "./client.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody } from "./protocol.js";
import { SyncError } from "./transport.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { done, openRaw } from "../../test/support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();
const KEY = new Uint8Array(32).map((_, i) => i * 5 + 3);

/** A server that stores the key record it is given and answers every pull with `changes`. */
function hostile(
  changes: unknown[],
  keyRecord: Uint8Array | null = null,
): (url: string, init: RequestInit) => Promise<Response> {
  let pulled = false;
  return async (url, init) => {
    const path = new URL(url).pathname;
    let body: unknown;
    if (path.endsWith("/hello")) body = { v: 1, user: "u", keyRecord, hasData: keyRecord !== null, seq: 0 };
    else if (path.endsWith("/key")) {
      keyRecord ??= (decodeBody(new Uint8Array(init.body as ArrayBuffer)) as { keyRecord: Uint8Array }).keyRecord;
      body = { v: 1, keyRecord };
    } else if (path.endsWith("/push")) body = { v: 1, changed: 0, dropped: 0, seq: 0 };
    else if (path.endsWith("/pull")) {
      body = pulled
        ? { v: SYNC_PROTOCOL_VERSION, changes: [], cursor: 1, more: false }
        : { v: SYNC_PROTOCOL_VERSION, changes, cursor: 1, more: false };
      pulled = true;
    } else return new Response("not found", { status: 404 });
    return new Response(encodeBody(body) as Uint8Array<ArrayBuffer>, { headers: { "content-type": SYNC_MEDIA_TYPE } });
  };
}

const bytes = (type: string) => [type, new Uint8Array([1, 2, 3])];
const bundle = (fields: Record<string, unknown>) => ({
  kind: "checkpoint",
  seq: 1,
  checkpoint: {
    thread_id: "t",
    checkpoint_ns: "",
    checkpoint_id: "2",
    checkpoint: bytes("msgpack+aes-gcm"),
    metadata: bytes("msgpack+aes-gcm"),
    channel_versions: {},
    blobs: [],
    writes: [],
    ...fields,
  },
});

const PLANTS: [string, unknown][] = [
  [
    'a write over the saver\'s key-id copy (thread "", the reserved namespace)',
    bundle({
      thread_id: "",
      checkpoint_ns: "\u0000tombstone",
      checkpoint_id: "",
      writes: [{ task_id: "", idx: 0, channel: "\u0000tombstone", task_path: "", value: bytes("key") }],
    }),
  ],
  ["a checkpoint in the reserved namespace", bundle({ checkpoint_ns: "\u0000tombstone", checkpoint_id: "x" })],
  ["a bundle without blobs", bundle({ blobs: null })],
  ["a checkpoint id that is not a string", bundle({ checkpoint_id: 7 })],
  ["a change of an unknown kind", { kind: "rewrite", seq: 1 }],
  // A row's chain (binding version 3) is exactly a SHA-256 as lowercase hex.
  ["a chain of 63 hex characters", bundle({ chain: "ab".repeat(32).slice(1) })],
  ["a chain in uppercase hex", bundle({ chain: "AB".repeat(32) })],
  ["a chain that is not a string", bundle({ chain: 12345 })],
];

describe("a hostile sync server's pulled rows", () => {
  for (const [what, change] of PLANTS) {
    it(`${what}: refused with SyncError "bad_response", nothing written`, async () => {
      const serde: SerializerProtocol = await EncryptedSerializer.fromRawKey(KEY);
      const saver = track(new IndexedDBSaver({ dbName: freshDbName("hostile-sync"), serde }));
      const c1 = await saver.put(
        { configurable: { thread_id: "t", checkpoint_ns: "" } },
        { ...emptyCheckpoint(), id: "1" },
        { source: "loop", step: 0, parents: {} },
        {},
      );
      await saver.putWrites(c1, [["x", "one"]], "task");
      const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch: hostile([change]) });
      const error = await sync.syncNow().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SyncError);
      expect((error as SyncError).code).toBe("bad_response");
      // Nothing landed: the key-id copy still names the key, the thread is as it was.
      const db = await openRaw(saver.dbName);
      try {
        const tx = db.transaction(["writes", "checkpoints"], "readonly");
        const copy = (await done(tx.objectStore("writes").get(KEY_ID_WRITE_KEY))) as { key_id?: string };
        expect(typeof copy.key_id).toBe("string");
        expect(await done(tx.objectStore("checkpoints").count())).toBe(1);
      } finally {
        db.close();
      }
      await saver.putWrites(c1, [["y", "two"]], "task-2");
      expect((await saver.getTuple(c1))?.pendingWrites).toHaveLength(2);
    });
  }
});

describe("a hostile sync server's key record", () => {
  /** A genuine key record, of a database under another key. */
  async function foreignRecord(): Promise<Uint8Array> {
    const other = track(
      new IndexedDBSaver({
        dbName: freshDbName("hostile-key"),
        serde: await EncryptedSerializer.fromRawKey(new Uint8Array(32)),
      }),
    );
    await other.unlock();
    const db = await openRaw(other.dbName);
    try {
      return encodeBody((await done(db.transaction(["meta"]).objectStore("meta").get("key"))).value);
    } finally {
      db.close();
    }
  }
  const RECORDS: [string, () => Promise<Uint8Array>][] = [
    ["a record of another key", foreignRecord],
    ["a malformed record", async () => encodeBody({ kind: "aes-gcm", v: 1, kek: "0000000000000000", keys: [] })],
    ["not a record at all", async () => encodeBody("x")],
  ];
  for (const [what, record] of RECORDS) {
    it(`${what}, offered to a fresh device: key_mismatch, not adopted, the device still usable`, async () => {
      const serde: SerializerProtocol = await EncryptedSerializer.fromRawKey(KEY);
      const saver = track(new IndexedDBSaver({ dbName: freshDbName("hostile-key"), serde }));
      const sync = new SyncClient({
        saver,
        url: "http://sync.invalid",
        token: "t",
        fetch: hostile([], await record()),
      });
      await expect(sync.syncNow()).rejects.toMatchObject({ code: "key_mismatch" });
      // Before the fix the record was adopted: every later call, "Wrong passphrase or key".
      const c1 = await saver.put(
        { configurable: { thread_id: "t", checkpoint_ns: "" } },
        { ...emptyCheckpoint(), id: "1" },
        { source: "loop", step: 0, parents: {} },
        {},
      );
      expect((await saver.getTuple(c1))?.checkpoint.id).toBe("1");
    });
  }
});

describe("a hostile sync server's thread list", () => {
  /** A server whose every `/threads` answer is `page(url)`. */
  const listing = (page: (url: URL) => unknown) => async (url: string) => {
    const body = page(new URL(url));
    return new Response(encodeBody(body) as Uint8Array<ArrayBuffer>, { headers: { "content-type": SYNC_MEDIA_TYPE } });
  };
  const thread = (thread_id: string) => ({ thread_id, checkpoints: 1, latest_checkpoint_id: "1", seq: 1 });
  const listed = async (sync: SyncClient, pageSize?: number) => {
    const ids: string[] = [];
    for await (const t of sync.remoteThreads({ pageSize })) ids.push(t.thread_id);
    return ids;
  };

  it("one that ignores after and names the same next again: bad_response, not an endless loop", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("hostile-threads") }));
    const fetch = listing(() => ({ v: SYNC_PROTOCOL_VERSION, threads: [thread("a"), thread("b")], next: "b" }));
    const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch });
    await expect(listed(sync)).rejects.toMatchObject({ name: "SyncError", code: "bad_response" });
  });

  it("a next that is not the page's last thread, or a malformed thread: bad_response", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("hostile-threads") }));
    for (const body of [
      { v: SYNC_PROTOCOL_VERSION, threads: [thread("a")], next: "z" },
      { v: SYNC_PROTOCOL_VERSION, threads: [], next: "a" },
      { v: SYNC_PROTOCOL_VERSION, threads: [{ ...thread("a"), checkpoints: "1" }] },
      { v: SYNC_PROTOCOL_VERSION, threads: [thread("__proto__")] },
    ]) {
      const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch: listing(() => body) });
      await expect(listed(sync), JSON.stringify(body)).rejects.toMatchObject({ code: "bad_response" });
    }
  });

  it("a server that predates pages: its whole list, asked for once", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("hostile-threads") }));
    const asked: string[] = [];
    const fetch = listing((url) => {
      asked.push(url.search);
      return { v: SYNC_PROTOCOL_VERSION, threads: ["a", "b", "c"].map(thread) };
    });
    const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch });
    expect(await listed(sync, 2)).toEqual(["a", "b", "c"]);
    expect(asked).toEqual(["?limit=2&app=" + encodeURIComponent(saver.dbName)]);
    await expect(sync.remoteThreads({ pageSize: 1001 }).next()).rejects.toThrow(RangeError);
  });
});
