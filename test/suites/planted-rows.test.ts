/**
 * Attacks by someone who can edit the profile's files but holds no key, on
 * this round's code: planted or altered rows the saver keeps for itself (the
 * key-id copy in `writes`) and rows that list()'s page reads gather. Runs on
 * fake-indexeddb in Node and on the real IndexedDB in Chromium.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type CheckpointMetadata, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { KEY_ID_WRITE_KEY, keyIdWrite } from "../../src/saver/schema.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();
/** Savers open on a database: closed before it is edited, as by someone holding only its files. */
const open: IndexedDBSaver[] = [];

const KEY = new Uint8Array(32).map((_, i) => i * 7 + 1);
const encrypted = () => EncryptedSerializer.fromRawKey(KEY);
const THREAD = "victim";

function saverOn(name: string, serde?: SerializerProtocol): IndexedDBSaver {
  const saver = track(new IndexedDBSaver({ dbName: name, serde }));
  open.push(saver);
  return saver;
}

async function raw(name: string, stores: string[], work: (tx: IDBTransaction) => Promise<void> | void) {
  for (const saver of open.splice(0)) await saver.close();
  const db = await openRaw(name);
  try {
    const tx = db.transaction(stores, "readwrite");
    await work(tx);
    await committed(tx);
  } finally {
    db.close();
  }
}

const cfg = (id?: string): RunnableConfig => ({
  configurable: { thread_id: THREAD, checkpoint_ns: "", ...(id ? { checkpoint_id: id } : {}) },
});
const meta = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });

/** The key-id copy `putWrites` checks, as `writes` holds it (undefined: none). */
async function keyIdCopy(name: string): Promise<unknown> {
  let copy: unknown;
  await raw(name, ["writes"], async (tx) => {
    const row = (await done(tx.objectStore("writes").get(KEY_ID_WRITE_KEY))) as { key_id?: unknown } | undefined;
    copy = row?.key_id;
  });
  return copy;
}

describe("the key-id copy in writes, planted or altered", () => {
  for (const mode of ["plain", "encrypted"] as const) {
    for (const attack of ["altered", "planted"] as const) {
      it(`${mode} saver, copy ${attack}: putWrites checks the key record, writes, and puts the copy right`, async () => {
        const name = freshDbName("key-id-copy");
        const serde = async () => (mode === "encrypted" ? await encrypted() : undefined);
        const first = saverOn(name, await serde());
        const c1 = await first.put(cfg(), { ...emptyCheckpoint(), id: "1" }, meta(0), {});
        await first.putWrites(c1, [["x", "one"]], "t1");
        const genuine = await keyIdCopy(name);
        expect(genuine === undefined).toBe(mode === "plain");
        // Altered: the real copy names another key; planted: a copy where
        // there was none (plain) or a second saver's key id (encrypted).
        await raw(name, ["writes"], (tx) => {
          tx.objectStore("writes").put(keyIdWrite(attack === "altered" ? "0000000000000000" : "f00dfeedf00dfeed"));
        });
        const second = saverOn(name, await serde());
        // Before the fix: KeyChangedError ("changed in another tab"), on
        // every putWrites, forever, even on a plain saver.
        await second.putWrites(c1, [["y", "two"]], "t2");
        expect((await second.getTuple(c1))?.pendingWrites).toEqual([
          ["t1", "x", "one"],
          ["t2", "y", "two"],
        ]);
        expect(await keyIdCopy(name)).toBe(genuine);
        const third = saverOn(name, await serde());
        await third.putWrites(c1, [["z", "three"]], "t3");
        expect((await third.getTuple(c1))?.pendingWrites).toHaveLength(3);
      });
    }
  }
});

describe("list() page reads against getTuple", () => {
  it("two checkpoints of one page at versions Infinity and -Infinity each get their own channel value", async () => {
    const name = freshDbName("list-infinite");
    const saver = saverOn(name, await encrypted());
    let parent = cfg();
    for (const [id, version, value] of [
      ["1", -Infinity, "low"],
      ["2", Infinity, "high"],
    ] as const) {
      parent = await saver.put(
        parent,
        { ...emptyCheckpoint(), id, channel_values: { a: value }, channel_versions: { a: version } },
        meta(Number(id)),
        { a: version },
      );
    }
    const listed = [];
    for await (const tuple of saver.list(cfg())) listed.push(tuple);
    expect(listed.map((tuple) => tuple.checkpoint.channel_values)).toEqual([{ a: "high" }, { a: "low" }]);
    for (const tuple of listed) expect(tuple).toEqual(await saver.getTuple(cfg(tuple.checkpoint.id)));
  });
});
