/**
 * Schema version 5: a checkpoint row lists the channel versions it has with
 * no stored value (`absent_keys`), so the latest read asks for nothing that
 * is not there; a value stored later at a listed version (here a blob sync
 * pulls; prune's delta snapshot in test/suites/lifecycle.test.ts) takes the
 * version off every row listing it, and neither a put carrying the parent's
 * list nor a read on this saver's guess keeps a version the row no longer
 * lists. Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { rawAccessOf } from "./raw-access.js";
import { readThread } from "../sync/push.js";
import { applyChanges } from "../sync/pull.js";
import type { CheckpointRow } from "../rows/shapes.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { putRaw, readStore } from "../../test/support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();
afterEach(() => vi.restoreAllMocks());

const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };
const root = (thread_id: string, checkpoint_id?: string): RunnableConfig => ({
  configurable: { thread_id, checkpoint_ns: "", ...(checkpoint_id ? { checkpoint_id } : {}) },
});
const SCOPE = { scope: "http://sync.invalid\u0000u", cursor: 1 };

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

/** A saver reading IndexedDB every time (nothing answered from the write lease's memory). */
function saverOn(dbName = freshDbName("absent")): IndexedDBSaver {
  return track(new IndexedDBSaver({ dbName, freshReads: false }));
}

/** The channels `id`'s stored row lists as having no value. */
async function listed(saver: IndexedDBSaver, id: string): Promise<string[]> {
  const row = (await rawAccessOf(saver)!.db.read(
    ["checkpoints"],
    (tx) => tx.objectStore("checkpoints").get(["t", "", id]),
    "read a row",
  )) as CheckpointRow | undefined;
  return (row?.absent_keys ?? []).map((key) => key[2]).sort();
}

/** Counts value reads from now on: blob gets and `by_value` index gets. */
function countValueReads(): () => number {
  let count = 0;
  const get = IDBObjectStore.prototype.get;
  vi.spyOn(IDBObjectStore.prototype, "get").mockImplementation(function (this: IDBObjectStore, query) {
    if (this.name === "blobs") count += 1;
    return get.call(this, query);
  });
  const indexGet = IDBIndex.prototype.get;
  vi.spyOn(IDBIndex.prototype, "get").mockImplementation(function (this: IDBIndex, query) {
    if (this.name === "by_value") count += 1;
    return indexGet.call(this, query);
  });
  return () => count;
}

/**
 * Parent `p`: `a` with a value, `b` at version 1 with none (LangGraph's
 * consumed trigger channels look like this). Returns its config.
 */
async function parentWithoutB(
  saver: IndexedDBSaver,
  p: string,
  more: Record<string, number> = {},
): Promise<RunnableConfig> {
  const versions = { a: 1, b: 1, ...more };
  return saver.put(root("t"), checkpoint(p, { a: "a1" }, versions), meta, versions);
}

/** {@link parentWithoutB} `p` and a child `c` that changes only `a` (so carries `b` over without a value). */
async function parentAndChild(saver: IndexedDBSaver): Promise<[string, string]> {
  const [p, c] = [uuid6(0), uuid6(0)];
  const parent = await parentWithoutB(saver, p);
  await saver.put(parent, checkpoint(c, { a: "a2" }, { a: 2, b: 1 }), meta, { a: 2 });
  return [p, c];
}

/** A pull of a value at `b`'s version 1 for checkpoint `p` (another device stored one: a prune snapshot, say). */
async function pullValueOfB(target: IndexedDBSaver, p: string, more: Record<string, number> = {}): Promise<void> {
  const source = saverOn();
  const versions = { a: 1, b: 1, ...more };
  await source.put(root("t"), checkpoint(p, { a: "a1", b: "b from elsewhere" }, versions), meta, versions);
  const wire = (await readThread(rawAccessOf(source)!, "t")).find((c) => c.wire.checkpoint_id === p)!.wire;
  await applyChanges(rawAccessOf(target)!, [{ kind: "checkpoint", seq: 1, checkpoint: wire }], SCOPE);
}

describe("versions without a stored value (absent_keys)", () => {
  it("are listed when introduced and when carried over, and the latest read asks for none of them", async () => {
    const dbName = freshDbName("absent");
    const saver = saverOn(dbName);
    const [p, c] = await parentAndChild(saver);
    expect(await listed(saver, p)).toEqual(["b"]);
    expect(await listed(saver, c)).toEqual(["b"]);
    // Another saver knows nothing of them: only the row tells it. `a` is inline, `b` listed: no value read.
    const reads = countValueReads();
    const tuple = await saverOn(dbName).getTuple(root("t"));
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "a2" });
    expect(reads()).toBe(0);
  });

  it("a list page asks for none of them either (a delta channel's versions, one per step)", async () => {
    const saver = saverOn();
    let config = root("t");
    for (let i = 1; i <= 6; i++) {
      const versions = { a: i, b: i };
      config = await saver.put(config, checkpoint(uuid6(0), { a: `a${i}` }, versions), meta, versions);
    }
    const reads = countValueReads();
    const values = [];
    for await (const tuple of saver.list(root("t"))) values.push(tuple.checkpoint.channel_values);
    expect(values).toEqual([6, 5, 4, 3, 2, 1].map((i) => ({ a: `a${i}` })));
    expect(reads()).toBe(0);
  });

  it("a pulled value at a listed version is taken off every row listing it, and read", async () => {
    const dbName = freshDbName("absent");
    const saver = saverOn(dbName);
    const [p, c] = await parentAndChild(saver);
    await pullValueOfB(saver, p);
    expect(await listed(saver, p)).toEqual([]);
    expect(await listed(saver, c)).toEqual([]);
    const tuple = await saverOn(dbName).getTuple(root("t"));
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "a2", b: "b from elsewhere" });
  });

  it("a put does not carry over a version its parent row no longer lists (the saver remembered the old list)", async () => {
    const dbName = freshDbName("absent");
    const saver = saverOn(dbName);
    const [p, c] = [uuid6(0), uuid6(0)];
    const parent = await parentWithoutB(saver, p);
    await pullValueOfB(saver, p);
    // The saver last saw `p` listing `b`; the row no longer does.
    await saver.put(parent, checkpoint(c, { a: "a2" }, { a: 2, b: 1 }), meta, { a: 2 });
    expect(await listed(saver, c)).toEqual([]);
    const tuple = await saverOn(dbName).getTuple(root("t"));
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "a2", b: "b from elsewhere" });
  });

  it("a put listing again from its parent row keeps what that row still lists", async () => {
    const saver = saverOn();
    const [p, c] = [uuid6(0), uuid6(0)];
    const parent = await parentWithoutB(saver, p, { d: 1 });
    await pullValueOfB(saver, p, { d: 1 });
    await saver.put(parent, checkpoint(c, { a: "a2" }, { a: 2, b: 1, d: 1 }), meta, { a: 2 });
    expect(await listed(saver, p)).toEqual(["d"]);
    expect(await listed(saver, c)).toEqual(["d"]);
  });

  it("the latest read on this saver's guess reads a version the row no longer lists", async () => {
    const saver = saverOn();
    const p = uuid6(0);
    await parentWithoutB(saver, p);
    await pullValueOfB(saver, p);
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "a1", b: "b from elsewhere" });
  });

  it("a saver answering from memory (the write lease) is told: its next read has the pulled value", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("absent") }));
    const p = uuid6(0);
    await parentWithoutB(saver, p);
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "a1" });
    await pullValueOfB(saver, p);
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "a1", b: "b from elsewhere" });
  });

  it("a copied thread lists the same versions, keyed by the new thread", async () => {
    const saver = saverOn();
    const [, c] = await parentAndChild(saver);
    await saver.copyThread("t", "copy");
    const row = (await rawAccessOf(saver)!.db.read(
      ["checkpoints"],
      (tx) => tx.objectStore("checkpoints").get(["copy", "", c]),
      "read a row",
    )) as CheckpointRow;
    expect(row.absent_keys).toEqual([["copy", "", "b", 1]]);
    expect((await saver.getTuple(root("copy")))?.checkpoint.channel_values).toEqual({ a: "a2" });
  });

  it("an edited list (not a list, keys of another shape or thread) lists nothing: values are asked for as before", async () => {
    const edits: unknown[] = ["b", 7, { 0: ["t", "", "b", 1] }, [null, "b", ["t", "", "b"]], [["other", "", "b", 1]]];
    for (const edit of edits) {
      const dbName = freshDbName("absent");
      const saver = saverOn(dbName);
      const [p, c] = await parentAndChild(saver);
      await pullValueOfB(saver, p); // `b` now has a value at version 1: a list hiding it would drop it
      const rows = await readStore<CheckpointRow>(dbName, "checkpoints");
      await putRaw(
        dbName,
        "checkpoints",
        rows.map((row) => ({ ...row, absent_keys: edit })),
      );
      const both = { a: "a2", b: "b from elsewhere" };
      // This saver's guess of the latest, another saver's cold read, a copy and a put on top.
      for (const reader of [saver, saverOn(dbName)])
        expect((await reader.getTuple(root("t")))?.checkpoint.channel_values, JSON.stringify(edit)).toEqual(both);
      await saver.copyThread("t", "copy");
      expect((await saver.getTuple(root("copy")))?.checkpoint.channel_values).toEqual(both);
      await saver.put(root("t", c), checkpoint(uuid6(0), { a: "a3" }, { a: 3, b: 1 }), meta, { a: 3 });
      expect((await saverOn(dbName).getTuple(root("t")))?.checkpoint.channel_values).toEqual({ ...both, a: "a3" });
    }
  });

  it.each([
    ["plain", async (): Promise<EncryptedSerializer | undefined> => undefined],
    [
      "encrypted",
      (): Promise<EncryptedSerializer | undefined> => EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(3)),
    ],
  ] as const)(
    "%s: a list edited on one row hides nothing from the other rows of a list page sharing the version",
    async (_name, serdeOf) => {
      const dbName = freshDbName("absent-edited");
      const serde = await serdeOf();
      const open = () => track(new IndexedDBSaver({ dbName, freshReads: false, ...(serde ? { serde } : {}) }));
      const writer = open();
      // b@1 is over INLINE_MAX: a blob row that c2 and c3 share with c1, which introduced it.
      const big = "L".repeat(3000);
      const c1 = await writer.put(root("t"), checkpoint("c1", { a: "one", b: big }, { a: 1, b: 1 }), meta, {
        a: 1,
        b: 1,
      });
      const c2 = await writer.put(c1, checkpoint("c2", { a: "two", b: big }, { a: 2, b: 1 }), meta, { a: 2 });
      await writer.put(c2, checkpoint("c3", { a: "three", b: big }, { a: 3, b: 1 }), meta, { a: 3 });
      await writer.close();
      // Edited outside the saver: the newest row, read first in a page, lists b@1 as having no value.
      const c3 = (await readStore<CheckpointRow>(dbName, "checkpoints")).find((row) => row.checkpoint_id === "c3")!;
      await putRaw(dbName, "checkpoints", [{ ...c3, absent_keys: [["t", "", "b", 1]] }]);
      const reader = open();
      const listedValues: Record<string, string[]> = {};
      for await (const tuple of reader.list(root("t")))
        listedValues[tuple.checkpoint.id] = Object.keys(tuple.checkpoint.channel_values).sort();
      // c3 itself reads without b, as if its blob were deleted (docs/encryption.md: what is not detected).
      expect({ c2: listedValues.c2, c1: listedValues.c1 }).toEqual({ c2: ["a", "b"], c1: ["a", "b"] });
      expect((await reader.getTuple(root("t", "c2")))?.checkpoint.channel_values).toEqual({ a: "two", b: big });
    },
  );
});
