/**
 * The `meta` "format" record: a database whose rows are in a format newer
 * than this code reads is refused with a clear error before any row is read
 * or written, whatever the serializer (a record of random bytes is
 * test/suites/bad-input.test.ts's: the rows still read). Node
 * (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBCheckpointError } from "../core/errors.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { IndexedDBSaver } from "./index.js";
import { SAVER_FORMAT } from "./schema.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
const meta = { source: "input", step: -1, parents: {} } as CheckpointMetadata;
const thread = { configurable: { thread_id: "t", checkpoint_ns: "" } };

/** Rewrites the `meta` "format" record of closed database `dbName` outside the saver. */
async function setFormat(dbName: string, value: unknown): Promise<void> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  await new Promise<void>((resolve, reject) => {
    const tx = db.transaction("meta", "readwrite");
    tx.objectStore("meta").put({ name: "format", value });
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error);
  });
  db.close();
}

const serializers = [
  { name: "plain", serde: async () => undefined },
  { name: "encrypted", serde: () => EncryptedSerializer.fromRawKey(KEY) },
];

describe.each(serializers)("the row format record ($name)", ({ serde }) => {
  /** A database holding one checkpoint, closed, with its format record set to `value`. */
  async function databaseOfFormat(value: unknown): Promise<string> {
    const dbName = freshDbName("format-version");
    const writer = track(new IndexedDBSaver({ dbName, serde: await serde() }));
    await writer.put(thread, { ...emptyCheckpoint(), id: "c1" }, meta, {});
    await writer.close();
    await setFormat(dbName, value);
    return dbName;
  }

  it(`opens a database of format ${SAVER_FORMAT}`, async () => {
    const dbName = await databaseOfFormat(SAVER_FORMAT);
    const saver = track(new IndexedDBSaver({ dbName, serde: await serde() }));
    expect((await saver.getTuple(thread))?.checkpoint.id).toBe("c1");
  });

  it("refuses a newer format by name, reading and writing nothing", async () => {
    const dbName = await databaseOfFormat(SAVER_FORMAT + 1);
    const saver = track(new IndexedDBSaver({ dbName, serde: await serde() }));
    const refusal = saver.getTuple(thread);
    await expect(refusal).rejects.toThrow(IndexedDBCheckpointError);
    await expect(refusal).rejects.toThrow(`row format ${SAVER_FORMAT + 1}, written by a newer version`);
    await expect(saver.put(thread, { ...emptyCheckpoint(), id: "c2" }, meta, {})).rejects.toThrow(/newer version/);
    await saver.close();
    // Still there, untouched, for the newer version to read.
    await setFormat(dbName, SAVER_FORMAT);
    const reader = track(new IndexedDBSaver({ dbName, serde: await serde() }));
    expect((await reader.getTuple(thread))?.checkpoint.id).toBe("c1");
  });

  it("a format 1 database says format 2 from the put of its first row holding a value inline", async () => {
    const dbName = await databaseOfFormat(1);
    const saver = track(new IndexedDBSaver({ dbName, serde: await serde() }));
    const first = await saver.getTuple(thread);
    // Only a value too large to sit inline: the row is as format 1 wrote it, the record stays.
    const big = await saver.put(
      first!.config,
      { ...emptyCheckpoint(), id: "c2", channel_values: { a: "x".repeat(4096) }, channel_versions: { a: 1 } },
      meta,
      { a: 1 },
    );
    expect(await formatOf(dbName)).toBe(1);
    await saver.put(
      big,
      {
        ...emptyCheckpoint(),
        id: "c3",
        channel_values: { a: "x".repeat(4096), b: 1 },
        channel_versions: { a: 1, b: 1 },
      },
      meta,
      { b: 1 },
    );
    expect(await formatOf(dbName)).toBe(SAVER_FORMAT);
    expect((await saver.getTuple(thread))?.checkpoint.channel_values).toEqual({ a: "x".repeat(4096), b: 1 });
  });
});

/** The `meta` "format" record's value of database `dbName`, read outside the saver. */
async function formatOf(dbName: string): Promise<unknown> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  try {
    return await new Promise((resolve, reject) => {
      const request = db.transaction("meta").objectStore("meta").get("format");
      request.onsuccess = () => resolve((request.result as { value: unknown } | undefined)?.value);
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}
