/**
 * Replication writes through the saver's own rules: the push side reads
 * tombstones as the saver does, the pull side deletes, raises tombstones,
 * rewrites summaries and adopts key records with the saver's functions.
 * Runs without a server: push and pull are called on a saver directly.
 * Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { SerializationError } from "../core/errors.js";
import { IndexedDBSaver } from "../saver/index.js";
import { rawAccessOf } from "../saver/raw-access.js";
import { KEY_ID_WRITE_KEY, tombstoneName, type WriteRow } from "../rows/shapes.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { SyncClient } from "./client.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, encodeBody, type WireChange } from "./protocol.js";
import { applyChanges } from "./pull.js";
import { localInventory, readThread } from "./push.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { done, openRaw } from "../../test/support/reliability/raw.js";
import { checkpointOf, stepMetadata, threadAt } from "../../test/support/inline-rows.js";

const track = trackSavers<IndexedDBSaver>();
const KEY = new Uint8Array(32).map((_, i) => i * 7 + 1);
const SCOPE = { scope: "http://sync.invalid\u0000u", cursor: 1 };

/** A saver on a fresh database with the checkpoints `ids` (in namespace `ns`) on thread "t". */
async function saverWith(ids: string[], ns = ""): Promise<IndexedDBSaver> {
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("replication") }));
  for (const id of ids) {
    const checkpoint: Checkpoint = { ...emptyCheckpoint(), id };
    await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: ns } },
      checkpoint,
      { source: "loop", step: 0, parents: {} },
      {},
    );
  }
  return saver;
}

/** Replaces thread "t"'s tombstone record with `value`, as code outside the saver could. */
async function plantTombstone(dbName: string, value: unknown): Promise<void> {
  const db = await openRaw(dbName);
  await done(
    db
      .transaction("meta", "readwrite")
      .objectStore("meta")
      .put({ name: tombstoneName("t"), value }),
  );
  db.close();
}

/** The keys of every blob row, read directly. */
async function blobKeys(dbName: string): Promise<IDBValidKey[][]> {
  const db = await openRaw(dbName);
  const keys = await done(db.transaction("blobs").objectStore("blobs").getAllKeys());
  db.close();
  return keys as IDBValidKey[][];
}

/** The thread summary row of `threadId`, read directly. */
async function summaryOf(
  dbName: string,
  threadId: string,
): Promise<{ latest?: { checkpoint_id: string } } | undefined> {
  const db = await openRaw(dbName);
  const row = await done(db.transaction("threads").objectStore("threads").get(threadId));
  db.close();
  return row as { latest?: { checkpoint_id: string } } | undefined;
}

describe("replication through the saver's functions", () => {
  it("a malformed tombstone fails the pull with SerializationError, as the saver fails, and nothing is applied", async () => {
    const source = await saverWith([uuid6(1)]);
    const [local] = await readThread(rawAccessOf(source)!, "t");
    const target = await saverWith([]);
    await target.deleteThread("t");
    await plantTombstone(target.dbName, { max_deleted_id: 5 });
    const changes: WireChange[] = [{ kind: "checkpoint", seq: 1, checkpoint: local!.wire }];
    await expect(applyChanges(rawAccessOf(target)!, changes, SCOPE)).rejects.toBeInstanceOf(SerializationError);
    await expect(target.deleteThread("t")).rejects.toBeInstanceOf(SerializationError);
    expect(await summaryOf(target.dbName, "t")).toBeUndefined();
  });

  it("a malformed tombstone fails the push inventory with SerializationError instead of reading as none", async () => {
    const saver = await saverWith([uuid6(1)]);
    await plantTombstone(saver.dbName, { max_deleted_id: "x" }); // no `dropped`
    await expect(localInventory(rawAccessOf(saver)!)).rejects.toBeInstanceOf(SerializationError);
  });

  it("a pulled delete keeps what is newer than it and summarizes the thread by what is left", async () => {
    const [a, b] = [uuid6(1), uuid6(2)];
    const saver = await saverWith([a]);
    const config = { configurable: { thread_id: "t", checkpoint_ns: "sub" } };
    await saver.put(config, { ...emptyCheckpoint(), id: b }, { source: "loop", step: 1, parents: {} }, {});
    const access = rawAccessOf(saver)!;
    await applyChanges(access, [{ kind: "delete", seq: 1, delete: { thread_id: "t", max_deleted_id: a } }], SCOPE);
    const left = await readThread(access, "t");
    expect(left.map((c) => c.wire.checkpoint_id)).toEqual([b]);
    // The saver's summary rule: the newest root checkpoint, else the newest of any namespace.
    expect((await summaryOf(saver.dbName, "t"))?.latest?.checkpoint_id).toBe(b);
    expect((await localInventory(access)).tombstones.get("t")).toBe(a);
  });

  it("a pulled checkpoint adds no blob row for a value a local checkpoint holds inline, and reads it", async () => {
    const [c, d] = [uuid6(1), uuid6(2)];
    // A holds C's small values inline (row format 2); B gets C by pull, then continues with D.
    const a = await saverWith([]);
    await a.put(threadAt("t"), checkpointOf(c, { x: "kept", y: "first" }, { x: 1, y: 1 }), stepMetadata, {
      x: 1,
      y: 1,
    });
    const b = await saverWith([]);
    const [fromA] = await readThread(rawAccessOf(a)!, "t");
    await applyChanges(rawAccessOf(b)!, [{ kind: "checkpoint", seq: 1, checkpoint: fromA!.wire }], SCOPE);
    await b.put(threadAt("t", c), checkpointOf(d, { x: "kept", y: "second" }, { x: 1, y: 2 }), stepMetadata, {
      y: 2,
    });
    const fromB = (await readThread(rawAccessOf(b)!, "t")).find((local) => local.wire.checkpoint_id === d)!;
    // D's bundle carries every value it names, C's x among them.
    expect(fromB.wire.blobs.map((blob) => blob.channel).sort()).toEqual(["x", "y"]);
    await applyChanges(rawAccessOf(a)!, [{ kind: "checkpoint", seq: 2, checkpoint: fromB.wire }], SCOPE);
    // Only D's own value is new to A: x stays in C's row alone.
    expect((await blobKeys(a.dbName)).map((key) => key[2])).toEqual(["y"]);
    expect((await a.getTuple(threadAt("t", d)))?.checkpoint.channel_values).toEqual({ x: "kept", y: "second" });
    expect((await a.getTuple(threadAt("t", c)))?.checkpoint.channel_values).toEqual({ x: "kept", y: "first" });
  });

  it("a row edited to list a pulled value's key in its inline_keys, holding nothing, does not keep the value out", async () => {
    const d = uuid6(2);
    const source = await saverWith([]);
    await source.put(threadAt("t"), checkpointOf(d, { x: "pulled" }, { x: 1 }), stepMetadata, { x: 1 });
    const [fromSource] = await readThread(rawAccessOf(source)!, "t");
    const target = await saverWith([]);
    await target.put(threadAt("other"), checkpointOf(uuid6(1), { z: "z" }, { z: 1 }), stepMetadata, { z: 1 });
    // Edited outside the saver: a row of another thread lists t's key (the clear inline_keys).
    const db = await openRaw(target.dbName);
    const store = db.transaction("checkpoints", "readwrite").objectStore("checkpoints");
    const [row] = (await done(store.getAll())) as { inline_keys?: unknown[] }[];
    row!.inline_keys = [...(row!.inline_keys ?? []), ["t", "", "x", 1]];
    await done(store.put(row));
    db.close();
    await applyChanges(rawAccessOf(target)!, [{ kind: "checkpoint", seq: 1, checkpoint: fromSource!.wire }], SCOPE);
    expect((await target.getTuple(threadAt("t", d)))?.checkpoint.channel_values).toEqual({ x: "pulled" });
  });

  it("an adopted key record comes with the key-id copy the saver writes beside it", async () => {
    const serde = await EncryptedSerializer.fromRawKey(KEY);
    const first = track(new IndexedDBSaver({ dbName: freshDbName("replication"), serde }));
    await first.unlock();
    const record = (await rawAccessOf(first)!.readKeyRecord())!;
    const second = track(
      new IndexedDBSaver({ dbName: freshDbName("replication"), serde: await EncryptedSerializer.fromRawKey(KEY) }),
    );
    expect(await rawAccessOf(second)!.adoptKeyRecord(record)).toEqual(record);
    const copies = await Promise.all(
      [first, second].map(async (saver) => {
        const db = await openRaw(saver.dbName);
        const row = (await done(db.transaction("writes").objectStore("writes").get(KEY_ID_WRITE_KEY))) as WriteRow;
        db.close();
        return row;
      }),
    );
    expect(copies[1]?.key_id).toBeTypeOf("string");
    expect(copies[1]).toEqual(copies[0]);
    // A second adoption keeps the record already there.
    const other = track(
      new IndexedDBSaver({ dbName: freshDbName("replication"), serde: await EncryptedSerializer.fromRawKey(KEY) }),
    );
    await other.unlock();
    const foreign = (await rawAccessOf(other)!.readKeyRecord())!;
    expect(await rawAccessOf(second)!.adoptKeyRecord(foreign)).toEqual(record);
  });

  it("reaches a saver only through the internal seam: no public method, and a look-alike is refused", async () => {
    const saver = await saverWith([]);
    expect("_rawAccess" in saver).toBe(false);
    expect(rawAccessOf(saver)).toBeDefined();
    const lookAlike = { dbName: saver.dbName, _rawAccess: () => rawAccessOf(saver), subscribe: () => () => {} };
    expect(() => new SyncClient({ saver: lookAlike as never, url: "http://127.0.0.1:1", token: "t" })).toThrow(
      TypeError,
    );
    new SyncClient({ saver, url: "http://127.0.0.1:1", token: "t" }).close();
  });
});

describe("SyncClient's lock", () => {
  it("runs one round of a database at a time, also where Web Locks are missing", async () => {
    const saver = await saverWith([]);
    let inHello = 0;
    let most = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    /** A server with nothing to pull whose first hello waits for `release`. */
    const fetch = async (url: string): Promise<Response> => {
      const path = new URL(url).pathname;
      let body: unknown = { v: SYNC_PROTOCOL_VERSION, changes: [], cursor: 0, more: false };
      if (path.endsWith("/hello")) {
        inHello += 1;
        most = Math.max(most, inHello);
        if (inHello === 1) await held;
        inHello -= 1;
        body = { v: 1, user: "u", keyRecord: null, hasData: false, seq: 0 };
      }
      const bytes = encodeBody(body) as Uint8Array<ArrayBuffer>;
      return new Response(bytes, { headers: { "content-type": SYNC_MEDIA_TYPE } });
    };
    const options = { saver, url: "http://sync.invalid", token: "t", fetch };
    const [a, b] = [new SyncClient(options), new SyncClient(options)];
    const rounds = Promise.all([a.syncNow(), b.syncNow()]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(inHello).toBe(1); // b waits for a's round
    release();
    await rounds;
    expect(most).toBe(1);
    a.close();
    b.close();
  });
});
