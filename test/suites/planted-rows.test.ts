/**
 * Attacks by someone who can edit the profile's files but holds no key, on
 * this round's code: planted or altered rows the saver keeps for itself (the
 * key-id copy in `writes`), rows that list()'s page reads gather, and the
 * clear `created_at` stamps listThreads reads thread times from. Runs on
 * fake-indexeddb in Node and on the real IndexedDB in Chromium.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  emptyCheckpoint,
  uuid6,
  type CheckpointMetadata,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DecryptionError, SerializationError } from "../../src/core/errors.js";
import { FORMAT_MAGIC, FORMAT_VERSION } from "../../src/serde/msgpack/wire.js";
import { KEY_ID_WRITE_KEY, keyIdWrite } from "../../src/rows/shapes.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import type { AesGcmKeyRecord } from "../../src/serde/encrypted/key-record.js";
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

describe("list() page reads with planted rows, encrypted", () => {
  const STEPS = 12;
  /** A thread whose channel "a" changes at every step (one range read per page) and "b" never. */
  async function thread(name: string): Promise<void> {
    const saver = saverOn(name, await encrypted());
    let parent = cfg();
    for (let i = 1; i <= STEPS; i++) {
      const versions = { a: i * 10, b: 1 };
      parent = await saver.put(
        parent,
        {
          ...emptyCheckpoint(),
          id: `c${String(i).padStart(3, "0")}`,
          // `a` too large to sit inline (row format 2): blob rows, which the range reads crowd.
          channel_values: { a: `a${i}`.padEnd(4096, "."), b: "b" },
          channel_versions: versions,
        },
        meta(i),
        i === 1 ? versions : { a: versions.a },
      );
      await saver.putWrites(parent, [["x", `w${i}`]], "task");
    }
  }
  const listAll = async (saver: IndexedDBSaver) => {
    const listed = [];
    for await (const tuple of saver.list(cfg())) listed.push(tuple);
    return listed;
  };

  it("blobs at unused versions crowding the range and writes of no checkpoint change nothing", async () => {
    const name = freshDbName("list-planted");
    await thread(name);
    const before = await listAll(saverOn(name, await encrypted()));
    await raw(name, ["blobs", "writes"], async (tx) => {
      const blobs = (await done(tx.objectStore("blobs").getAll())) as Record<string, unknown>[];
      const writes = (await done(tx.objectStore("writes").getAll())) as Record<string, unknown>[];
      const source = blobs.find((blob) => blob.channel === "a")!;
      // Every unused version between two steps' versions: past the range read's cap.
      for (let version = 11; version < STEPS * 10; version++) {
        if (version % 10 !== 0) tx.objectStore("blobs").put({ ...source, version });
      }
      const write = writes.find((row) => row.checkpoint_ns === "")!;
      for (const between of ["c005a", "c0050", "c005\u0000", "c00"]) {
        tx.objectStore("writes").put({ ...write, checkpoint_id: between });
      }
    });
    const saver = saverOn(name, await encrypted());
    const after = await listAll(saver);
    expect(after).toEqual(before);
    expect(after).toHaveLength(STEPS);
    for (const tuple of after) expect(tuple).toEqual(await saver.getTuple(cfg(tuple.checkpoint.id)));
  });

  for (const plant of ["a write moved from another checkpoint", "a write under a numeric task id"] as const) {
    it(`${plant} in a listed checkpoint fails list() and getTuple alike`, async () => {
      const name = freshDbName("list-planted");
      await thread(name);
      await raw(name, ["writes"], async (tx) => {
        const writes = (await done(tx.objectStore("writes").getAll())) as Record<string, unknown>[];
        const source = writes.find((row) => row.checkpoint_id === "c003")!;
        tx.objectStore("writes").put(
          plant === "a write moved from another checkpoint"
            ? { ...source, checkpoint_id: "c007", task_id: "other" }
            : { ...source, checkpoint_id: "c007", task_id: 5 },
        );
      });
      const saver = saverOn(name, await encrypted());
      await expect(listAll(saver)).rejects.toBeInstanceOf(DecryptionError);
      await expect(saver.getTuple(cfg("c007"))).rejects.toBeInstanceOf(DecryptionError);
      expect((await saver.getTuple(cfg("c006")))?.pendingWrites).toEqual([["task", "x", "w6"]]);
    });
  }
});

describe("crafted msgpack in a plain saver's rows", () => {
  /** The format header, then `depth` nested one-element arrays (or maps) around 1. */
  function nested(depth: number, token: number[]): Uint8Array {
    const body = new Uint8Array(2 + depth * token.length + 1);
    body.set([FORMAT_MAGIC, FORMAT_VERSION]);
    for (let i = 0; i < depth; i++) body.set(token, 2 + i * token.length);
    body[body.length - 1] = 1;
    return body;
  }
  const payloads: [string, Uint8Array][] = [
    ["200,000 nested arrays", nested(200_000, [0x91])],
    ["100,000 nested maps", nested(100_000, [0x81, 0xa1, 0x61])],
    [
      "an array32 declaring 4 billion items",
      new Uint8Array([FORMAT_MAGIC, FORMAT_VERSION, 0xdd, 0xff, 0xff, 0xff, 0xff, 1]),
    ],
    ["a bin32 declaring 4 GiB", new Uint8Array([FORMAT_MAGIC, FORMAT_VERSION, 0xc6, 0xff, 0xff, 0xff, 0xff, 1])],
  ];
  for (const [what, bytes] of payloads) {
    it(`${what} as a channel value: a SerializationError naming the row, the saver still usable`, async () => {
      const name = freshDbName("crafted-msgpack");
      const saver = saverOn(name);
      const c1 = await saver.put(
        cfg(),
        { ...emptyCheckpoint(), id: "1", channel_values: { a: "x" }, channel_versions: { a: 1 } },
        meta(0),
        { a: 1 },
      );
      // The value sits inline in its checkpoint row (row format 2), read as the blob it stands for.
      await raw(name, ["checkpoints"], async (tx) => {
        const row = (await done(tx.objectStore("checkpoints").get([THREAD, "", "1"]))) as Record<string, unknown>;
        tx.objectStore("checkpoints").put({ ...row, inline: { a: ["msgpack", bytes] } });
      });
      const again = saverOn(name);
      const error = await again.getTuple(c1).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SerializationError);
      expect((error as Error).message).toContain('"blob"');
      const listed = again.list(cfg())[Symbol.asyncIterator]().next();
      await expect(listed).rejects.toBeInstanceOf(SerializationError);
      await again.put(c1, { ...emptyCheckpoint(), id: "2" }, meta(1), {});
      expect((await again.getTuple(cfg("2")))?.checkpoint.id).toBe("2");
    });
  }
});

describe("rows a walk proved, then edited in everything but what the walk remembers", () => {
  it("sealed bytes altered, tag, parent link and versions kept: walks are unchanged, every read of the row fails closed", async () => {
    const name = freshDbName("proven-bytes");
    // Kept open across the edit (not in `open`): its memory of proven rows is what is attacked.
    const saver = track(new IndexedDBSaver({ dbName: name, serde: await encrypted() }));
    let parent = cfg();
    for (const id of ["1", "2", "3"]) {
      parent = await saver.put(parent, { ...emptyCheckpoint(), id }, meta(Number(id)), {});
      await saver.putWrites(parent, [["m", `turn ${id}`]], `task-${id}`);
    }
    const walk = (id: string) => saver.getDeltaChannelHistory({ config: cfg(id), channels: ["m"] });
    expect((await walk("3")).m!.writes.map(([, , value]) => value)).toEqual(["turn 1", "turn 2"]);
    await raw(name, ["checkpoints"], async (tx) => {
      const row = (await done(tx.objectStore("checkpoints").get([THREAD, "", "2"]))) as Record<string, unknown>;
      const [type, bytes] = row.checkpoint as [string, Uint8Array];
      const altered = bytes.slice();
      for (let i = 11; i < altered.length - 16; i++) altered[i] ^= 0x5a; // inner type, IV, ciphertext; the tag kept
      tx.objectStore("checkpoints").put({ ...row, checkpoint: [type, altered] });
    });
    // A new walk through the proven rows: it reads only their parent links and
    // versions, which are the proven row's, so it steers exactly as before.
    await saver.put(cfg("3"), { ...emptyCheckpoint(), id: "4" }, meta(4), {});
    expect((await walk("4")).m!.writes.map(([, , value]) => value)).toEqual(["turn 1", "turn 2", "turn 3"]);
    // Nothing else trusts that memory: the row itself fails closed.
    await expect(saver.getTuple(cfg("2"))).rejects.toBeInstanceOf(DecryptionError);
    const listed = saver
      .list(cfg(), { before: cfg("3") })
      [Symbol.asyncIterator]()
      .next();
    await expect(listed).rejects.toBeInstanceOf(DecryptionError);
    // A saver that has proven nothing walks the same: binding version 3's hash
    // chain proves the ancestors' links and versions (what a walk reads)
    // without their sealed bytes, which every read of the row still refuses.
    const fresh = track(new IndexedDBSaver({ dbName: name, serde: await encrypted() }));
    const history = await fresh.getDeltaChannelHistory({ config: cfg("4"), channels: ["m"] });
    expect(history.m!.writes.map(([, , value]) => value)).toEqual(["turn 1", "turn 2", "turn 3"]);
    await expect(fresh.getTuple(cfg("2"))).rejects.toBeInstanceOf(DecryptionError);
  });
});

describe("an interrupted key rotation whose key record was reordered", () => {
  /** The saver's key record, as `meta` holds it. */
  async function keyRecord(name: string): Promise<AesGcmKeyRecord> {
    let record: AesGcmKeyRecord | undefined;
    await raw(name, ["meta"], async (tx) => {
      record = ((await done(tx.objectStore("meta").get("key"))) as { value: AesGcmKeyRecord }).value;
    });
    return record!;
  }

  it("changeKey, resumed after the data keys were swapped, still ends under a key the old record never held", async () => {
    // The old passphrase leaked: the user changes it. The rotation is cut off
    // after its first step (both data keys in the record, the fresh one first).
    const name = freshDbName("rotation-swap");
    const oldSerde = await EncryptedSerializer.fromRawKey(KEY);
    const newKey = new Uint8Array(32).map((_, i) => 255 - i);
    const saver = saverOn(name, oldSerde);
    const c1 = await saver.put(cfg(), { ...emptyCheckpoint(), id: "1" }, meta(0), {});
    await saver.putWrites(c1, [["x", "secret"]], "task");
    const oldDataKey = (await keyRecord(name)).keys[0]!.id;
    await saver.changeKey(await EncryptedSerializer.fromRawKey(newKey), { rewrapOnly: true });
    const rewrapped = await keyRecord(name);
    const cutOff = (await (await EncryptedSerializer.fromRawKey(newKey)).beginRekey(rewrapped))
      .record as AesGcmKeyRecord;
    expect(cutOff.keys.map((key) => key.id)).toEqual([expect.any(String), oldDataKey]);
    // Someone with the files puts the old data key first (the order is not
    // sealed): new values would be sealed under it, and a resumed rotation
    // would re-encrypt everything under it.
    await raw(name, ["meta"], (tx) => {
      tx.objectStore("meta").put({ name: "key", value: { ...cutOff, keys: [cutOff.keys[1], cutOff.keys[0]] } });
    });
    const resumed = saverOn(name, await EncryptedSerializer.fromRawKey(newKey));
    await resumed.changeKey(await EncryptedSerializer.fromRawKey(newKey));
    const record = await keyRecord(name);
    expect(record.keys).toHaveLength(1);
    expect(record.keys[0]!.id).not.toBe(oldDataKey);
    const reader = saverOn(name, await EncryptedSerializer.fromRawKey(newKey));
    expect((await reader.getTuple(c1))?.pendingWrites).toEqual([["task", "x", "secret"]]);
  });
});

describe("a checkpoint row's clear created_at altered", () => {
  const edits: [string, unknown][] = [
    ["a string", "yesterday"],
    ["an object", { at: 1 }],
    ["null", null],
    ["NaN", NaN],
    ["a Date", new Date(5)],
  ];
  for (const [label, stamp] of edits) {
    it(`to ${label}: listThreads still gives numbers for the thread's times, the summary's time`, async () => {
      const name = freshDbName("created-at");
      const saver = saverOn(name);
      let config = cfg();
      for (let step = 0; step < 3; step++) {
        config = await saver.put(config, { ...emptyCheckpoint(), id: uuid6(step) }, meta(step), {});
      }
      const [before] = await listThreads(saver);
      // Every row of the thread: the first gives createdAt, the newest updatedAt.
      await raw(name, ["checkpoints"], async (tx) => {
        const store = tx.objectStore("checkpoints");
        for (const row of (await done(store.getAll())) as Record<string, unknown>[]) {
          store.put({ ...row, created_at: stamp });
        }
      });
      const [after] = await listThreads(saverOn(name));
      // Before the fix: createdAt came back as the stored string, object, null or Date,
      // and updatedAt as NaN (null in JSON), which no `before` bound ever excludes.
      for (const time of [after!.createdAt, after!.updatedAt]) {
        expect(typeof time, `${label}: ${String(time)}`).toBe("number");
        expect(Number.isFinite(time)).toBe(true);
      }
      expect(after!.updatedAt).toBeGreaterThanOrEqual(after!.createdAt);
      expect({ ...after, createdAt: 0, updatedAt: 0 }).toEqual({ ...before, createdAt: 0, updatedAt: 0 });
    });
  }
});

async function listThreads(saver: IndexedDBSaver) {
  const listed = [];
  for await (const thread of saver.listThreads()) listed.push(thread);
  return listed;
}
