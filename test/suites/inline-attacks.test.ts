/**
 * Row format 2 under attack: someone who can edit the profile's files (not
 * run code in the unlocked page) rewrites the values checkpoint rows hold
 * inline, their `by_value` index keys, the blob rows beside them and the
 * `meta` format record of an `EncryptedSerializer` saver. Each case is an
 * attack whose outcome docs/encryption.md promises: it fails closed
 * (`DecryptionError`), or it changes nothing a reader sees. What is not
 * detected (a value hidden or deleted reads as deleted) is listed there and
 * not tested here. Node and Chromium.
 *
 * The thread: c1 introduces a@1 and b@1 (inline), c2 a@2 (inline), c3 b@3
 * (3,000 characters: a blob row) and c@3 (inline), c4 introduces nothing.
 * Thread "s" holds a@2 of its own (another value under the same key).
 */
import { describe, expect, it } from "vitest";
import { DecryptionError, EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import type { BlobRow, CheckpointRow, MetaRow } from "../../src/rows/shapes.js";
import { resyncNewestRows } from "../../src/saver/journal-adapter.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { checkpointOf as cp, stepMetadata as meta, threadAt as at } from "../support/inline-rows.js";
import { committed, openRaw, putRaw, readStore } from "../support/reliability/raw.js";
import { rawAccessOf } from "../../src/saver/raw-access.js";
import { applyChanges } from "../../src/sync/pull.js";
import type { WireChange } from "../../src/sync/protocol.js";

const track = trackSavers<IndexedDBSaver>();
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 3 + 1);
const BIG = "L".repeat(3000);

/** What every checkpoint of thread t holds when nothing was touched. */
const HONEST = {
  c1: { a: "one", b: "bee" },
  c2: { a: "two", b: "bee" },
  c3: { a: "two", b: BIG, c: "sea" },
  c4: { a: "two", b: BIG, c: "sea" },
};
type Id = keyof typeof HONEST;

async function saverOn(dbName: string): Promise<IndexedDBSaver> {
  return track(new IndexedDBSaver({ dbName, serde: await EncryptedSerializer.fromRawKey(KEY) }));
}

/** The thread above in a fresh database, the saver closed; its rows as stored. */
async function thread() {
  const dbName = freshDbName("inline-attacks");
  const saver = await saverOn(dbName);
  const c1 = await saver.put(at("t"), cp("c1", HONEST.c1, { a: 1, b: 1 }), meta, { a: 1, b: 1 });
  const c2 = await saver.put(c1, cp("c2", HONEST.c2, { a: 2, b: 1 }), meta, { a: 2 });
  const c3 = await saver.put(c2, cp("c3", HONEST.c3, { a: 2, b: 3, c: 3 }), meta, { b: 3, c: 3 });
  await saver.put(c3, cp("c4", HONEST.c4, { a: 2, b: 3, c: 3 }), meta, {});
  await saver.put(at("s"), cp("c2", { a: "other" }, { a: 2 }), meta, { a: 2 });
  await saver.close();
  const rows = await readStore<CheckpointRow>(dbName, "checkpoints");
  const row = (id: Id, threadId = "t") => rows.find((r) => r.thread_id === threadId && r.checkpoint_id === id)!;
  const blobs = await readStore<BlobRow>(dbName, "blobs");
  // The layout the cases rely on: what is inline, what is a blob row.
  expect(Object.keys(row("c1").inline!).sort()).toEqual(["a", "b"]);
  expect(Object.keys(row("c2").inline!)).toEqual(["a"]);
  expect(Object.keys(row("c3").inline!)).toEqual(["c"]);
  expect(row("c4").inline).toBeUndefined();
  expect(blobs.map((b) => `${b.thread_id}:${b.channel}@${String(b.version)}`)).toEqual(["t:b@3"]);
  return { dbName, row, blob: blobs[0]! };
}

/** Each checkpoint of thread t read by a fresh saver: its values, or the error's class name. */
async function readAll(dbName: string): Promise<Record<Id, unknown>> {
  const saver = await saverOn(dbName);
  const out = {} as Record<Id, unknown>;
  for (const id of Object.keys(HONEST) as Id[]) {
    out[id] = await saver.getTuple(at("t", id)).then(
      (tuple) => tuple?.checkpoint.channel_values,
      (error: Error) => error.name,
    );
  }
  await saver.close();
  return out;
}

/**
 * Thread t: c1 (a "one"), c2 holding a "two" inline, c3 naming c2's value, each of a run of its own (r1-r3);
 * then, the saver closed, c2's clear versions edited to a: 7, which would move its value to a blob row at
 * version 7 that c3 does not name (gone with the row). `attacked` is a saver on that database; `undo` closes
 * it, puts c2 back and resolves to a new saver that reads c3 whole.
 */
async function holderVersionsEdited(name: string) {
  const dbName = freshDbName(name);
  const saver = await saverOn(dbName);
  const ofRun = (run_id: string) => ({ ...meta, run_id }) as typeof meta;
  const c1 = await saver.put(at("t"), cp("c1", { a: "one" }, { a: 1 }), ofRun("r1"), { a: 1 });
  const c2 = await saver.put(c1, cp("c2", { a: "two" }, { a: 2 }), ofRun("r2"), { a: 2 });
  await saver.put(c2, cp("c3", { a: "two" }, { a: 2 }), ofRun("r3"), {});
  await saver.close();
  const holder = (await readStore<CheckpointRow>(dbName, "checkpoints")).find((row) => row.checkpoint_id === "c2")!;
  expect(Object.keys(holder.inline!)).toEqual(["a"]);
  await putRaw(dbName, "checkpoints", [{ ...holder, channel_versions: { a: 7 } }]);
  const attacked = await saverOn(dbName);
  const undo = async (): Promise<IndexedDBSaver> => {
    await attacked.close();
    await putRaw(dbName, "checkpoints", [holder]);
    const reader = await saverOn(dbName);
    expect((await reader.getTuple(at("t", "c3")))?.checkpoint.channel_values).toEqual({ a: "two" });
    return reader;
  };
  return { dbName, attacked, undo };
}

describe("values held inline (row format 2) under attack, encrypted", () => {
  it("copied to a younger row at the same version: reads as before; held under another channel, or swapped with a blob row of the same version: fails closed", async () => {
    const { dbName, row, blob } = await thread();
    // c2's a@2 also in c4 (whose a is at version 2): the very value, bound to the very key.
    await putRaw(dbName, "checkpoints", [{ ...row("c4"), inline: { a: row("c2").inline!.a } }]);
    expect(await readAll(dbName)).toEqual(HONEST);

    // c2's a@2 held as c4's c (version 3): another channel and version.
    await putRaw(dbName, "checkpoints", [{ ...row("c4"), inline: { c: row("c2").inline!.a } }]);
    expect(await readAll(dbName)).toEqual({ ...HONEST, c4: "DecryptionError" });
    await putRaw(dbName, "checkpoints", [row("c4")]);

    // c3's inline c@3 and the blob row b@3 trade values: same version, other channels.
    await putRaw(dbName, "checkpoints", [{ ...row("c3"), inline: { c: blob.value } }]);
    await putRaw(dbName, "blobs", [{ ...blob, value: row("c3").inline!.c }]);
    expect(await readAll(dbName)).toEqual({ ...HONEST, c3: "DecryptionError", c4: "DecryptionError" });
  });

  it("a blob row added at a version a row holds inline: another version's value fails closed in every checkpoint reading it there, a copy of the inline bytes changes nothing", async () => {
    const { dbName, row } = await thread();
    const planted = { thread_id: "t", checkpoint_ns: "", channel: "a", version: 2 };
    // c1's a@1 as the blob of a@2: c2 reads its own inline value, c3 and c4 read the blob row first.
    await putRaw(dbName, "blobs", [{ ...planted, value: row("c1").inline!.a }]);
    expect(await readAll(dbName)).toEqual({ ...HONEST, c3: "DecryptionError", c4: "DecryptionError" });
    const saver = await saverOn(dbName);
    await expect(
      saver.getDeltaChannelHistory({ config: at("t", "c4"), channels: ["a"] }),
      "the walk seeds from the blob row",
    ).rejects.toBeInstanceOf(DecryptionError);
    await saver.close();
    // The same bytes as the row holds (what a delete that moves the value to a blob row writes).
    await putRaw(dbName, "blobs", [{ ...planted, value: row("c2").inline!.a }]);
    expect(await readAll(dbName)).toEqual(HONEST);
  });

  it("a value planted inline in plaintext fails closed", async () => {
    const { dbName, row } = await thread();
    const plain = await new MsgpackSerializer().dumpsTyped("planted");
    await putRaw(dbName, "checkpoints", [{ ...row("c2"), inline: { a: plain } }]);
    expect(await readAll(dbName)).toEqual({
      c1: HONEST.c1,
      c2: "DecryptionError",
      c3: "DecryptionError",
      c4: "DecryptionError",
    });
  });

  it("an index entry planted for a value another row holds (a row of the same thread, or of another thread, listing its key in inline_keys) hides nothing", async () => {
    const { dbName, row } = await thread();
    const key: [string, string, string, number] = ["t", "", "a", 2];
    // What the crash journal re-appends after a recovery: the newest rows and the values they name.
    const resync = async () => {
      const db = await openRaw(dbName);
      const ops = await resyncNewestRows(db, [{ o: [["checkpoints", 0, { thread_id: "t", checkpoint_ns: "" }]] }]);
      db.close();
      return ops
        .filter((op) => op[0] === "blobs")
        .map((op) => `${(op[2] as BlobRow).channel}@${(op[2] as BlobRow).version}`);
    };
    const resynced = await resync();
    expect(resynced.filter((value) => value === "a@2")).toHaveLength(2);
    // c1 and thread s's c2 sort before t's c2 in the by_value index: its first entries for a@2.
    for (const planted of [row("c1"), row("c2", "s")]) {
      await putRaw(dbName, "checkpoints", [{ ...planted, inline_keys: [...planted.inline_keys!, key] }]);
      expect(await readAll(dbName), planted.thread_id).toEqual(HONEST);
      const saver = await saverOn(dbName);
      const listed = [];
      for await (const tuple of saver.list(at("t"))) listed.push(tuple.checkpoint.channel_values);
      expect(listed).toEqual([HONEST.c4, HONEST.c3, HONEST.c2, HONEST.c1]);
      await saver.close();
      expect(await resync(), planted.thread_id).toEqual(resynced);
      await putRaw(dbName, "checkpoints", [planted]);
    }
  });

  it("the row holding a value with its clear channel versions edited, then its run deleted: deleteForRuns fails closed and deletes nothing, so the value later checkpoints name is not lost", async () => {
    const { attacked, undo } = await holderVersionsEdited("inline-attacks-runs");
    await expect(attacked.deleteForRuns(["r2"])).rejects.toBeInstanceOf(DecryptionError);
    const reader = await undo();
    // Undone, the run deletes as it should, its value kept as a blob row for c3.
    await reader.deleteForRuns(["r2"]);
    expect((await reader.getTuple(at("t", "c3")))?.checkpoint.channel_values).toEqual({ a: "two" });
  });

  it("the row holding a value with its clear channel versions edited, then pruned away: prune fails closed and deletes nothing, so the value the kept checkpoint names is not lost", async () => {
    const { dbName, attacked, undo } = await holderVersionsEdited("inline-attacks-prune");
    await expect(attacked.prune(["t"])).rejects.toBeInstanceOf(DecryptionError);
    const reader = await undo();
    // Undone, prune keeps c3 alone, its value kept as a blob row.
    await reader.prune(["t"]);
    expect((await reader.getTuple(at("t")))?.checkpoint.channel_values).toEqual({ a: "two" });
    expect((await readStore<CheckpointRow>(dbName, "checkpoints")).map((row) => row.checkpoint_id)).toEqual(["c3"]);
  });

  it("the row holding a value with a channel removed from its clear versions (or all of them), then rekey(): rekey fails closed and the value is not left under the retired key", async () => {
    for (const versions of [{}, null]) {
      const dbName = freshDbName("inline-attacks-rekey");
      const saver = await saverOn(dbName);
      const c1 = await saver.put(at("t"), cp("c1", { a: "one" }, { a: 1 }), meta, { a: 1 });
      const c2 = await saver.put(c1, cp("c2", { a: "two" }, { a: 2 }), meta, { a: 2 });
      await saver.put(c2, cp("c3", { a: "two" }, { a: 2 }), meta, {});
      await saver.close();
      const holder = (await readStore<CheckpointRow>(dbName, "checkpoints")).find((row) => row.checkpoint_id === "c2")!;
      expect(Object.keys(holder.inline!)).toEqual(["a"]);
      await putRaw(dbName, "checkpoints", [{ ...holder, channel_versions: versions }]);
      const attacked = await saverOn(dbName);
      // Before: rekey re-encrypted c2's checkpoint and metadata but left its inline value under the old data key,
      // then dropped that key from the record: the value c3 names was lost for good, edit undone or not.
      const rekeying = attacked.rekey();
      await expect(rekeying, JSON.stringify(versions)).rejects.toBeInstanceOf(DecryptionError);
      await expect(rekeying).rejects.toThrow(/Checkpoint c2 of thread "t"/);
      await attacked.close();
      // The edit undone (the row as it is now, its clear versions put back), rekey finishes and c3 reads whole.
      const now = (await readStore<CheckpointRow>(dbName, "checkpoints")).find((row) => row.checkpoint_id === "c2")!;
      await putRaw(dbName, "checkpoints", [{ ...now, channel_versions: holder.channel_versions }]);
      const reader = await saverOn(dbName);
      await reader.rekey();
      expect((await reader.getTuple(at("t", "c3")))?.checkpoint.channel_values).toEqual({ a: "two" });
    }
  });

  // What sync pulls when another device removed c2 (its prune or deleteForRuns), or deleted the thread up to c2.
  const pulled: [string, WireChange][] = [
    [
      "a removal of c2",
      { kind: "removed", seq: 1, removed: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2" } },
    ],
    ["a delete up to c2", { kind: "delete", seq: 1, delete: { thread_id: "t", max_deleted_id: "c2" } }],
  ];
  for (const [what, change] of pulled) {
    it(`the row holding a value with its clear channel versions edited, then ${what} pulled: the pull fails closed and applies nothing, so the value c3 names is not lost`, async () => {
      const { dbName, attacked, undo } = await holderVersionsEdited("inline-attacks-pull");
      const scope = { scope: "http://sync.invalid\u0000u", cursor: 1 };
      const pull = applyChanges(rawAccessOf(attacked)!, [change], scope);
      await expect(pull).rejects.toBeInstanceOf(DecryptionError);
      await expect(pull).rejects.toThrow(/Checkpoint c2 of thread "t"/);
      const ids = async () => (await readStore<CheckpointRow>(dbName, "checkpoints")).map((row) => row.checkpoint_id);
      expect(await ids()).toEqual(["c1", "c2", "c3"]);
      const reader = await undo();
      // Undone, the pull applies, c2's value kept as a blob row for c3.
      await applyChanges(rawAccessOf(reader)!, [change], scope);
      expect(await ids()).toEqual(change.kind === "removed" ? ["c1", "c3"] : ["c3"]);
      expect((await reader.getTuple(at("t", "c3")))?.checkpoint.channel_values).toEqual({ a: "two" });
    });
  }

  it("the meta format record edited (2 to 1, removed, a string): rows read as before and the next put holding a value inline marks format 2 again; a newer format refuses the database, naming it", async () => {
    const { dbName } = await thread();
    const formatOf = async () => (await readStore<MetaRow>(dbName, "meta")).find((r) => r.name === "format")?.value;
    expect(await formatOf()).toBe(2);
    for (const edited of [1, undefined, "2"]) {
      const db = await openRaw(dbName);
      const tx = db.transaction(["meta"], "readwrite");
      if (edited === undefined) tx.objectStore("meta").delete("format");
      else tx.objectStore("meta").put({ name: "format", value: edited });
      await committed(tx);
      db.close();
      expect(await readAll(dbName), String(edited)).toEqual(HONEST);
      const saver = await saverOn(dbName);
      await saver.put(
        at("t", "c4"),
        cp(`c5${String(edited)}`, { ...HONEST.c4, a: "five" }, { a: 5, b: 3, c: 3 }),
        meta,
        {
          a: 5,
        },
      );
      await saver.close();
      expect(await formatOf(), String(edited)).toBe(2);
    }
    await putRaw(dbName, "meta", [{ name: "format", value: 3 }]);
    const saver = await saverOn(dbName);
    await expect(saver.getTuple(at("t", "c2"))).rejects.toThrow(/row format 3, written by a newer version/);
  });

  it("a row rolled back to its copy from before rekey() (the data key rotated) fails closed", async () => {
    const { dbName, row } = await thread();
    const saver = await saverOn(dbName);
    await saver.rekey();
    await saver.close();
    expect(await readAll(dbName)).toEqual(HONEST);
    await putRaw(dbName, "checkpoints", [row("c2")]);
    expect(await readAll(dbName)).toEqual({
      c1: HONEST.c1,
      c2: "DecryptionError",
      c3: "DecryptionError",
      c4: "DecryptionError",
    });
  });
});
