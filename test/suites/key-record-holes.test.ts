/**
 * The encryption key record (`meta` "key" of a saver, "serde-key" of a
 * store) edited so that its list of data keys has a hole: `[, ]` (length 1,
 * no entry) or a real entry followed by a hole. Structured clone keeps a
 * sparse array as sparse (V8 writes it as such, Chromium's IndexedDB stores
 * it), so anyone who can edit the profile's files can store one.
 *
 * Before the fix the record's check (`Array.prototype.every`, which skips
 * holes) passed it, and every operation of the saver or the store failed
 * with "TypeError: Cannot read properties of undefined (reading 'hex')". Now
 * it is a DecryptionError saying the record is malformed, like any other
 * altered record. Node (fake-indexeddb) and Chromium.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DecryptionError, EncryptedSerializer, IndexedDBSaver, IndexedDBStore } from "../../src/index.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);
const cfg: RunnableConfig = { configurable: { thread_id: "t", checkpoint_ns: "" } };
const track = trackSavers<IndexedDBSaver>();
const trackStore = trackSavers<IndexedDBStore>();

/** Edits of the record's entries (one, as the database has): `[, ]` and `[entry, , ]`. */
const EDITS: [string, (keys: unknown[]) => unknown[]][] = [
  ["a hole in place of its only key", () => new Array<unknown>(1)],
  ["its key then a hole", (keys) => Object.assign(new Array<unknown>(2), { 0: keys[0] })],
];

/** Replaces the `keys` of the record stored at `key` in `meta` (in-line `name` for the saver, out of line for the store). */
async function editKeys(dbName: string, key: string, inline: boolean, edit: (keys: unknown[]) => unknown[]) {
  const db = await openRaw(dbName);
  try {
    const tx = db.transaction(["meta"], "readwrite");
    const meta = tx.objectStore("meta");
    const stored = (await done(meta.get(key))) as Record<string, unknown>;
    const record = (inline ? stored.value : stored) as { keys: unknown[] };
    const edited = { ...record, keys: edit(record.keys) };
    // What was put must still have the hole after structured clone: the case is real only then.
    expect(Object.keys(edited.keys)).not.toEqual(Object.keys(Array.from(edited.keys)));
    if (inline) meta.put({ ...stored, value: edited });
    else meta.put(edited, key);
    await committed(tx);
  } finally {
    db.close();
  }
}

describe("a key record whose list of data keys has a hole", () => {
  it.each(EDITS)("(%s): a saver's reads and writes fail closed, no TypeError", async (_label, edit) => {
    const serde = await EncryptedSerializer.fromRawKey(KEY);
    const dbName = freshDbName("key-record-holes");
    const writer = track(new IndexedDBSaver({ dbName, serde }));
    await writer.put(cfg, { ...emptyCheckpoint(), id: "c1" }, { source: "input", step: -1, parents: {} }, {});
    await writer.close();
    await editKeys(dbName, "key", true, edit);
    const reader = track(new IndexedDBSaver({ dbName, serde }));
    const put = reader.put(cfg, { ...emptyCheckpoint(), id: "c2" }, { source: "input", step: -1, parents: {} }, {});
    for (const attempt of [reader.getTuple(cfg), put, reader.unlock()]) {
      const error = await attempt.then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error, String(error)).toBeInstanceOf(DecryptionError);
      expect(error!.message).toMatch(/key record is malformed: it was altered/);
    }
  });

  it.each(EDITS)("(%s): a store's reads and writes fail closed, no TypeError", async (_label, edit) => {
    const serde = await EncryptedSerializer.fromRawKey(KEY);
    const dbName = freshDbName("key-record-holes-store");
    const writer = trackStore(new IndexedDBStore({ dbName, serde }));
    await writer.put(["u"], "k", { text: "kept" });
    await writer.close();
    await editKeys(dbName, "serde-key", false, edit);
    const reader = trackStore(new IndexedDBStore({ dbName, serde }));
    for (const attempt of [reader.get(["u"], "k"), reader.search(["u"]), reader.put(["u"], "k2", { text: "new" })]) {
      const error = await attempt.then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error, String(error)).toBeInstanceOf(DecryptionError);
      expect(error!.message).toMatch(/key record is malformed: it was altered/);
    }
  });
});
