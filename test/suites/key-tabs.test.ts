/**
 * Key changes with several tabs (issue 11, item 7): after `rekey` or
 * `changeKey` in one tab, another tab's saver or store that bound the old
 * key must never write a value under the retired key. Its write either lands
 * under the new key (same passphrase: it binds again and re-encrypts) or
 * fails with `KeyChangedError` having written nothing. Two instances on one
 * database are two tabs: in Node on fake-indexeddb (with the in-process lock
 * fallback), in Chromium on the real IndexedDB, BroadcastChannel and Web
 * Locks. Each check is verified on the raw rows: every envelope names the
 * current data key, and a fresh instance holding only the new key reads all.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DecryptionError, KeyChangedError } from "../../src/core/errors.js";
import { EncryptedSerializer, inspectEnvelope, type AesGcmKeyRecord } from "../../src/serde/encrypted/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { request, withRaw } from "../support/raw-idb.js";

const serdeFor = (passphrase: string) =>
  EncryptedSerializer.fromPassphrase(passphrase, {
    salt: "key-tabs.test salt",
    iterations: 1_000,
    insecureTestOnlyWeakKdf: true,
  });

const open: { close(): Promise<void> }[] = [];
const created: string[] = [];
afterEach(async () => {
  vi.unstubAllGlobals();
  await Promise.all(open.splice(0).map((x) => x.close()));
  for (const name of created.splice(0)) await deleteDatabase(name);
});

function newDbName(prefix: string): string {
  const name = freshDbName(prefix);
  created.push(name);
  return name;
}

function tab<T extends { close(): Promise<void> }>(x: T): T {
  open.push(x);
  return x;
}

const saverTab = async (dbName: string, passphrase: string) =>
  tab(new IndexedDBSaver({ dbName, serde: await serdeFor(passphrase) }));
const storeTab = async (dbName: string, passphrase: string) =>
  tab(new IndexedDBStore({ dbName, serde: await serdeFor(passphrase) }));

/** Puts a checkpoint with one channel value on `threadId` and one pending write on it. */
async function putTurn(saver: IndexedDBSaver, threadId: string, text: string) {
  const checkpoint = emptyCheckpoint();
  checkpoint.id = uuid6(-1);
  checkpoint.channel_values = { note: text };
  checkpoint.channel_versions = { note: saver.getNextVersion(undefined) };
  const config = await saver.put(
    { configurable: { thread_id: threadId, checkpoint_ns: "" } },
    checkpoint,
    { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
    checkpoint.channel_versions,
  );
  await saver.putWrites(config, [["note", `${text} (write)`]], "task-1");
  return config;
}

/** Every row of every store in `stores`. */
function allRows(dbName: string, stores: string[]): Promise<unknown[]> {
  return withRaw(dbName, async (db) => {
    const tx = db.transaction(stores);
    const rows = await Promise.all(stores.map((name) => request(tx.objectStore(name).getAll())));
    return rows.flat();
  });
}

/** The key ids named by every encrypted value in `rows` (checkpoint, metadata, value, typed, latest metadata). */
function envelopeKeyIds(rows: unknown[]): string[] {
  const ids: string[] = [];
  const visit = (typed: unknown) => {
    if (!Array.isArray(typed) || typeof typed[0] !== "string" || !typed[0].endsWith("+aes-gcm")) return;
    ids.push(inspectEnvelope(typed[1] as Uint8Array)!.keyId);
  };
  for (const row of rows as Record<string, unknown>[]) {
    for (const field of ["checkpoint", "metadata", "value", "typed"]) visit(row[field]);
    visit((row.latest as Record<string, unknown> | undefined)?.metadata);
  }
  return ids;
}

const saverRecord = async (dbName: string) =>
  (
    (await withRaw(dbName, (db) => request(db.transaction("meta").objectStore("meta").get("key")))) as {
      value: AesGcmKeyRecord;
    }
  ).value;
const storeRecord = async (dbName: string) =>
  (await withRaw(dbName, (db) =>
    request(db.transaction("meta").objectStore("meta").get("serde-key")),
  )) as AesGcmKeyRecord;

/** Every saver value is sealed under the database's one current data key, and a fresh saver with `passphrase` reads `threads`. */
async function expectSaverAllUnderCurrentKey(dbName: string, passphrase: string, threads: Record<string, string>) {
  const record = await saverRecord(dbName);
  expect(record.keys).toHaveLength(1);
  const ids = envelopeKeyIds(await allRows(dbName, ["checkpoints", "blobs", "writes", "threads"]));
  expect(ids.length).toBeGreaterThan(0);
  expect(new Set(ids)).toEqual(new Set([record.keys[0]!.id]));
  const fresh = await saverTab(dbName, passphrase);
  for (const [threadId, text] of Object.entries(threads)) {
    const tuple = await fresh.getTuple({ configurable: { thread_id: threadId } });
    expect(tuple?.checkpoint.channel_values).toEqual({ note: text });
    expect(tuple?.pendingWrites?.map(([, , value]) => value)).toEqual([`${text} (write)`]);
  }
}

async function expectStoreAllUnderCurrentKey(dbName: string, passphrase: string, items: Record<string, string>) {
  const record = await storeRecord(dbName);
  expect(record.keys).toHaveLength(1);
  const ids = envelopeKeyIds(await allRows(dbName, ["items", "vectors"]));
  expect(new Set(ids)).toEqual(new Set([record.keys[0]!.id]));
  const fresh = await storeTab(dbName, passphrase);
  for (const [key, text] of Object.entries(items)) {
    expect((await fresh.get(["mem"], key))?.value).toEqual({ text });
  }
}

// Both ways: with the announcement on the change channel, and without it
// (a lost or late message): then the check in the write transaction alone
// must keep the retired key out.
for (const announced of [true, false]) {
  const how = announced ? "announced" : "not announced (the transaction's own check)";
  const setup = () => {
    if (!announced) vi.stubGlobal("BroadcastChannel", undefined);
  };

  describe(`IndexedDBSaver in another tab after a key change, ${how}`, () => {
    it("after rekey() its put and putWrites land under the new data key", async () => {
      setup();
      const dbName = newDbName("tabs-saver-rekey");
      const a = await saverTab(dbName, "pass");
      const b = await saverTab(dbName, "pass");
      await putTurn(a, "ta", "a before");
      await putTurn(b, "tb", "b before"); // tab B has bound the first data key
      await a.rekey();
      await putTurn(b, "tb", "b after");
      await expectSaverAllUnderCurrentKey(dbName, "pass", { ta: "a before", tb: "b after" });
    });

    it("after changeKey(new passphrase) its put and putWrites fail with KeyChangedError and write nothing", async () => {
      setup();
      const dbName = newDbName("tabs-saver-change");
      const a = await saverTab(dbName, "old");
      const b = await saverTab(dbName, "old");
      const config = await putTurn(b, "tb", "b before");
      await a.changeKey(await serdeFor("new"));
      const before = await allRows(dbName, ["checkpoints", "blobs", "writes", "threads"]);

      const put = putTurn(b, "tb", "b after");
      await expect(put).rejects.toBeInstanceOf(KeyChangedError);
      await expect(put).rejects.toBeInstanceOf(DecryptionError);
      await expect(put).rejects.toThrow(/changed in another tab/);
      await expect(b.putWrites(config, [["note", "late"]], "task-2")).rejects.toBeInstanceOf(KeyChangedError);
      expect(await allRows(dbName, ["checkpoints", "blobs", "writes", "threads"])).toEqual(before);
      await expectSaverAllUnderCurrentKey(dbName, "new", { tb: "b before" });
    });

    it("after changeKey(new passphrase, rewrapOnly) its writes read with the new passphrase, or fail with KeyChangedError", async () => {
      setup();
      const dbName = newDbName("tabs-saver-rewrap");
      const a = await saverTab(dbName, "old");
      const b = await saverTab(dbName, "old");
      await putTurn(b, "tb", "b before");
      await a.changeKey(await serdeFor("new"), { rewrapOnly: true });
      // The data key stays, so the transaction's check lets B write (readable
      // with the new passphrase); told of the change, B binds again and its
      // old passphrase no longer opens the record: KeyChangedError.
      await putTurn(b, "tb", "b after").catch((error: unknown) => expect(error).toBeInstanceOf(KeyChangedError));
      await expectSaverAllUnderCurrentKey(dbName, "new", {});
      const fresh = await saverTab(dbName, "new");
      const tuple = await fresh.getTuple({ configurable: { thread_id: "tb" } });
      expect(["b before", "b after"]).toContain((tuple?.checkpoint.channel_values as { note: string }).note);
    });

    it("writes racing a rekey all end under the new data key", async () => {
      setup();
      const dbName = newDbName("tabs-saver-race");
      const a = await saverTab(dbName, "pass");
      const b = await saverTab(dbName, "pass");
      const threads: Record<string, string> = {};
      for (let i = 0; i < 4; i++) await putTurn(a, `seed-${i}`, (threads[`seed-${i}`] = `seed ${i}`));
      await putTurn(b, "warm", (threads.warm = "warm"));
      const writes = Array.from({ length: 6 }, (_, i) => putTurn(b, `race-${i}`, (threads[`race-${i}`] = `race ${i}`)));
      await Promise.all([a.rekey(), ...writes]);
      // The rekey's passes caught what was written under the old key meanwhile;
      // from here on, B's writes must use the new key.
      await putTurn(b, "warm", (threads.warm = "warm after"));
      await expectSaverAllUnderCurrentKey(dbName, "pass", threads);
    });
  });

  describe(`IndexedDBStore in another tab after a key change, ${how}`, () => {
    it("after rekey() its put lands under the new data key", async () => {
      setup();
      const dbName = newDbName("tabs-store-rekey");
      const a = await storeTab(dbName, "pass");
      const b = await storeTab(dbName, "pass");
      await a.put(["mem"], "a", { text: "a before" });
      await b.put(["mem"], "b", { text: "b before" });
      await a.rekey();
      await b.put(["mem"], "b", { text: "b after" });
      await expectStoreAllUnderCurrentKey(dbName, "pass", { a: "a before", b: "b after" });
    });

    it("after changeKey(new passphrase) its put fails with KeyChangedError and writes nothing", async () => {
      setup();
      const dbName = newDbName("tabs-store-change");
      const a = await storeTab(dbName, "old");
      const b = await storeTab(dbName, "old");
      await b.put(["mem"], "b", { text: "b before" });
      await a.changeKey(await serdeFor("new"));
      const before = await allRows(dbName, ["items", "vectors", "namespaces"]);
      await expect(b.put(["mem"], "b", { text: "b after" })).rejects.toBeInstanceOf(KeyChangedError);
      await expect(b.put(["mem"], "c", { text: "c" })).rejects.toThrow(/changed in another tab/);
      expect(await allRows(dbName, ["items", "vectors", "namespaces"])).toEqual(before);
      await expectStoreAllUnderCurrentKey(dbName, "new", { b: "b before" });
    });
  });
}

describe("concurrent key changes from two tabs are serialized", () => {
  /** Records when `serde` starts and ends a data key rotation. */
  function trace(serde: EncryptedSerializer, tabName: string, events: string[]) {
    const begin = serde.beginRekey.bind(serde);
    const end = serde.endRekey.bind(serde);
    serde.beginRekey = async (stored) => {
      events.push(`${tabName}:begin`);
      return begin(stored);
    };
    serde.endRekey = async (stored) => {
      events.push(`${tabName}:end`);
      return end(stored);
    };
    return serde;
  }

  it("two savers' rekey() run one after the other, each rotating the key once", async () => {
    const dbName = newDbName("tabs-saver-two-rekeys");
    const events: string[] = [];
    const a = tab(new IndexedDBSaver({ dbName, serde: trace(await serdeFor("pass"), "A", events) }));
    const b = tab(new IndexedDBSaver({ dbName, serde: trace(await serdeFor("pass"), "B", events) }));
    await putTurn(a, "ta", "a");
    await putTurn(b, "tb", "b");
    const first = (await saverRecord(dbName)).keys[0]!.id;
    await Promise.all([a.rekey(), b.rekey()]);
    expect(events).toEqual(expect.arrayContaining(["A:begin", "A:end", "B:begin", "B:end"]));
    expect(events).toHaveLength(4);
    // Never two rotations in flight: each begin is followed by its own end.
    expect(events[0]!.split(":")[0]).toBe(events[1]!.split(":")[0]);
    expect(events[2]!.split(":")[0]).toBe(events[3]!.split(":")[0]);
    expect((await saverRecord(dbName)).keys[0]!.id).not.toBe(first);
    await expectSaverAllUnderCurrentKey(dbName, "pass", { ta: "a", tb: "b" });
  });

  it("two stores' rekey() run one after the other, and a changeKey after them", async () => {
    const dbName = newDbName("tabs-store-two-rekeys");
    const events: string[] = [];
    const a = tab(new IndexedDBStore({ dbName, serde: trace(await serdeFor("old"), "A", events) }));
    const b = tab(new IndexedDBStore({ dbName, serde: trace(await serdeFor("old"), "B", events) }));
    await a.put(["mem"], "a", { text: "a" });
    await b.put(["mem"], "b", { text: "b" });
    const first = (await storeRecord(dbName)).keys[0]!.id;
    await Promise.all([a.rekey(), b.rekey()]);
    expect(events).toHaveLength(4);
    expect(events[0]!.split(":")[0]).toBe(events[1]!.split(":")[0]);
    expect(events[2]!.split(":")[0]).toBe(events[3]!.split(":")[0]);
    expect((await storeRecord(dbName)).keys[0]!.id).not.toBe(first);
    await a.changeKey(await serdeFor("new"));
    await expectStoreAllUnderCurrentKey(dbName, "new", { a: "a", b: "b" });
  });
});
