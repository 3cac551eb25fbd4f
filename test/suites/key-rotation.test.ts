/**
 * Key changes as an attacker sees them (issue 11, items 4 and 7): one who
 * kept an old copy of a database's key record (a backup, the journal, disk
 * residue) and learned the old passphrase must not decrypt what the database
 * holds after `changeKey`, including values written after the change; and a
 * database that lost its key record is reported, not silently re-keyed.
 * And a key change that meets a value altered into something that is not a
 * `[type, bytes]` pair says which row, instead of a bare TypeError
 * ("type.endsWith is not a function") that named none.
 * Runs on fake-indexeddb in Node and on the real IndexedDB in Chromium.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { EncryptedSerializer, type AesGcmKeyRecord } from "../../src/serde/encrypted/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { request, withRaw } from "../support/raw-idb.js";

const SECRET = "SECRET-rotation-4f1c";

const serdeFor = (passphrase: string) =>
  EncryptedSerializer.fromPassphrase(passphrase, {
    salt: "key-rotation.test salt",
    iterations: 1_000,
    insecureTestOnlyWeakKdf: true,
  });

const created: string[] = [];
afterEach(async () => {
  for (const name of created.splice(0)) await deleteDatabase(name);
});

function newDbName(prefix: string): string {
  const name = freshDbName(prefix);
  created.push(name);
  return name;
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
}

/** The saver's `meta` row holding the key record (the store keeps the bare record under "serde-key"). */
const saverKeyRow = (name: string) =>
  withRaw(name, (db) => request(db.transaction("meta").objectStore("meta").get("key")));

async function putSaverKeyRow(name: string, row: unknown): Promise<void> {
  await withRaw(name, async (db) => {
    const tx = db.transaction("meta", "readwrite");
    tx.objectStore("meta").put(row);
    await done(tx);
  });
}

async function putCheckpoint(saver: IndexedDBSaver, threadId: string, text: string) {
  const checkpoint = emptyCheckpoint();
  checkpoint.id = uuid6(-1);
  checkpoint.channel_values = { note: text };
  checkpoint.channel_versions = { note: saver.getNextVersion(undefined) };
  await saver.put(
    { configurable: { thread_id: threadId, checkpoint_ns: "" } },
    checkpoint,
    { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
    checkpoint.channel_versions,
  );
  return { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpoint.id } };
}

describe("IndexedDBSaver.changeKey rotates the data key (issue 11, item 4)", () => {
  it("the old passphrase with an old copy of the key record decrypts nothing, before or after the change", async () => {
    const dbName = newDbName("rotation-saver");
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("old") });
    const before = await putCheckpoint(saver, "t", `${SECRET} before`);
    await saver.close();
    const oldRow = await saverKeyRow(dbName); // the attacker's backup

    const next = await serdeFor("new");
    await saver.changeKey(next);
    const after = await putCheckpoint(saver, "t", `${SECRET} after`);
    await saver.close();
    const newRow = await saverKeyRow(dbName);
    const oldIds = (oldRow as { value: AesGcmKeyRecord }).value.keys.map((k) => k.id);
    expect((newRow as { value: AesGcmKeyRecord }).value.keys.map((k) => k.id)).not.toEqual(oldIds);

    // The attacker puts the old record back and opens with the old passphrase.
    await putSaverKeyRow(dbName, oldRow);
    const attacker = new IndexedDBSaver({ dbName, serde: await serdeFor("old") });
    await expect(attacker.getTuple(after)).rejects.toBeInstanceOf(DecryptionError);
    await expect(attacker.getTuple(before)).rejects.toBeInstanceOf(DecryptionError);
    await attacker.close();

    await putSaverKeyRow(dbName, newRow);
    const owner = new IndexedDBSaver({ dbName, serde: await serdeFor("new") });
    expect((await owner.getTuple(before))?.checkpoint.channel_values).toEqual({ note: `${SECRET} before` });
    expect((await owner.getTuple(after))?.checkpoint.channel_values).toEqual({ note: `${SECRET} after` });
    await owner.close();
  });

  it("rewrapOnly keeps the data key: exactly what the docs say it does not protect against", async () => {
    const dbName = newDbName("rotation-rewrap");
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("old") });
    await putCheckpoint(saver, "t", `${SECRET} before`);
    await saver.close();
    const oldRow = await saverKeyRow(dbName);
    await saver.changeKey(await serdeFor("new"), { rewrapOnly: true });
    const after = await putCheckpoint(saver, "t", `${SECRET} after`);
    await saver.close();
    const old = new IndexedDBSaver({ dbName, serde: await serdeFor("old") });
    await expect(old.getTuple(after)).rejects.toThrow(/Wrong passphrase or key/);
    await old.close();
    await putSaverKeyRow(dbName, oldRow);
    const withBackup = new IndexedDBSaver({ dbName, serde: await serdeFor("old") });
    expect((await withBackup.getTuple(after))?.checkpoint.channel_values).toEqual({ note: `${SECRET} after` });
    await withBackup.close();
  });

  it("an interrupted change (re-wrapped, not yet re-encrypted) is finished by calling changeKey again", async () => {
    const dbName = newDbName("rotation-resume");
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("old") });
    const config = await putCheckpoint(saver, "t", `${SECRET} before`);
    await saver.close();
    const oldIds = ((await saverKeyRow(dbName)) as { value: AesGcmKeyRecord }).value.keys.map((k) => k.id);
    // The state a crash after the re-wrap leaves.
    await saver.changeKey(await serdeFor("new"), { rewrapOnly: true });
    await saver.close();

    const again = new IndexedDBSaver({ dbName, serde: await serdeFor("old") });
    await again.changeKey(await serdeFor("new"));
    await again.close();
    const record = ((await saverKeyRow(dbName)) as { value: AesGcmKeyRecord }).value;
    expect(record.keys).toHaveLength(1);
    expect(oldIds).not.toContain(record.keys[0]!.id);
    const owner = new IndexedDBSaver({ dbName, serde: await serdeFor("new") });
    expect((await owner.getTuple(config))?.checkpoint.channel_values).toEqual({ note: `${SECRET} before` });
    await owner.close();
  });
});

describe("IndexedDBStore.changeKey rotates the data key (issue 11, item 4)", () => {
  it("the old passphrase with an old copy of the key record decrypts no item, before or after the change", async () => {
    const dbName = newDbName("rotation-store");
    const store = new IndexedDBStore({ dbName, serde: await serdeFor("old") });
    await store.put(["user"], "before", { text: `${SECRET} before` });
    await store.close();
    const readKey = () => withRaw(dbName, (db) => request(db.transaction("meta").objectStore("meta").get("serde-key")));
    const writeKey = (record: unknown) =>
      withRaw(dbName, async (db) => {
        const tx = db.transaction("meta", "readwrite");
        tx.objectStore("meta").put(record, "serde-key");
        await done(tx);
      });
    const oldRecord = await readKey();
    expect(oldRecord).toMatchObject({ kind: "aes-gcm" });

    await store.changeKey(await serdeFor("new"));
    await store.put(["user"], "after", { text: `${SECRET} after` });
    await store.close();
    const newRecord = await readKey();

    await writeKey(oldRecord);
    const attacker = new IndexedDBStore({ dbName, serde: await serdeFor("old") });
    await expect(attacker.get(["user"], "after")).rejects.toBeInstanceOf(DecryptionError);
    await expect(attacker.get(["user"], "before")).rejects.toBeInstanceOf(DecryptionError);
    await attacker.close();

    await writeKey(newRecord);
    const owner = new IndexedDBStore({ dbName, serde: await serdeFor("new") });
    expect((await owner.get(["user"], "before"))?.value).toEqual({ text: `${SECRET} before` });
    expect((await owner.get(["user"], "after"))?.value).toEqual({ text: `${SECRET} after` });
    await owner.close();
  });
});

describe("a lost key record is reported, not replaced (issue 11, item 7)", () => {
  async function removeKey(dbName: string, key: string): Promise<void> {
    await withRaw(dbName, async (db) => {
      const tx = db.transaction("meta", "readwrite");
      tx.objectStore("meta").delete(key);
      await done(tx);
    });
  }

  it("IndexedDBSaver: a non-empty database without its key record fails naming the database, and no new key is made", async () => {
    const dbName = newDbName("lost-key-saver");
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const config = await putCheckpoint(saver, "t", `${SECRET} kept`);
    await saver.close();
    await removeKey(dbName, "key");
    const reopened = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const failure = reopened.getTuple(config);
    await expect(failure).rejects.toBeInstanceOf(DecryptionError);
    await expect(failure).rejects.toThrow(dbName);
    await expect(putCheckpoint(reopened, "t2", "new")).rejects.toBeInstanceOf(DecryptionError);
    await reopened.close();
    expect(await saverKeyRow(dbName)).toBeUndefined();
  });

  it("IndexedDBStore: the same", async () => {
    const dbName = newDbName("lost-key-store");
    const store = new IndexedDBStore({ dbName, serde: await serdeFor("pass") });
    await store.put(["user"], "a", { text: `${SECRET} kept` });
    await store.close();
    await removeKey(dbName, "serde-key");
    const reopened = new IndexedDBStore({ dbName, serde: await serdeFor("pass") });
    await expect(reopened.get(["user"], "a")).rejects.toThrow(dbName);
    await expect(reopened.put(["user"], "b", { text: "new" })).rejects.toBeInstanceOf(DecryptionError);
    await reopened.close();
    const key = await withRaw(dbName, (db) => request(db.transaction("meta").objectStore("meta").get("serde-key")));
    expect(key).toBeUndefined();
  });
});

describe("a key change meeting a value that is not a [type, bytes] pair", () => {
  const KEY = new Uint8Array(32).map((_, i) => i * 3 + 11);
  const NEXT = new Uint8Array(32).map((_, i) => i * 5 + 1);
  const edits: [string, (typed: [string, Uint8Array]) => unknown][] = [
    ["a string", () => "x"],
    ["a number as its type", ([, bytes]) => [5, bytes]],
    ["no bytes", ([type]) => [type]],
  ];
  /** Replaces `field` of the first row of `store` with `edit` of it. */
  async function alter(name: string, store: string, field: string, edit: (typed: [string, Uint8Array]) => unknown) {
    await withRaw(name, async (db) => {
      const tx = db.transaction(store, "readwrite");
      const rows = tx.objectStore(store);
      const [row] = (await request(rows.getAll())) as Record<string, [string, Uint8Array]>[];
      rows.put({ ...row, [field]: edit(row![field]!) });
      await done(tx);
    });
  }
  const expectNamed = async (change: Promise<unknown>, row: RegExp) => {
    const error = await change.then(
      () => undefined,
      (e: unknown) => e,
    );
    // Before the fix: a TypeError ("Cannot read properties of undefined (reading 'buffer')",
    // "type.endsWith is not a function") naming no row.
    expect(error).toBeInstanceOf(DecryptionError);
    expect((error as Error).message).toMatch(row);
    expect((error as Error).message).toMatch(/not a \[type, bytes\] pair/);
  };
  for (const [label, edit] of edits) {
    it(`(${label}): IndexedDBSaver's rekey and changeKey fail naming the row`, async () => {
      const name = newDbName("rekey-shape");
      const saver = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      await putCheckpoint(saver, "t", "hello");
      await saver.close();
      await alter(name, "checkpoints", "metadata", edit);
      const reopened = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      try {
        await expectNamed(reopened.rekey(), /\["metadata","t",""/);
        await expectNamed(reopened.changeKey(await EncryptedSerializer.fromRawKey(NEXT)), /\["metadata","t",""/);
      } finally {
        await reopened.close();
      }
    });

    it(`(${label}): IndexedDBStore's rekey and changeKey fail naming the item`, async () => {
      const name = newDbName("rekey-shape-store");
      const store = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      await store.put(["u"], "a", { x: 1 });
      await store.close();
      await alter(name, "items", "typed", edit);
      const reopened = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      try {
        await expectNamed(reopened.rekey(), /\["store","item","u","a"\]/);
        await expectNamed(reopened.changeKey(await EncryptedSerializer.fromRawKey(NEXT)), /\["store","item","u","a"\]/);
      } finally {
        await reopened.close();
      }
    });
  }
});
