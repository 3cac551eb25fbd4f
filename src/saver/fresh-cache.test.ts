/**
 * Latest checkpoints answered from memory (fresh-cache.ts) must never be
 * stale. Each test first makes sure the saver answers from memory (no read
 * transaction), then writes as another tab would (a second saver on the
 * same database), through sync's apply path, with an encrypting serializer,
 * or in a transaction that aborts, and checks what the next read returns.
 * Runs in Node (fake-indexeddb) and Chromium.
 */
import {
  JsonPlusSerializer,
  emptyCheckpoint,
  uuid6,
  type Checkpoint,
  type CheckpointMetadata,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { ChangeFeed } from "./events.js";
import { contextOf } from "./registry.js";
import { freshSize } from "./fresh-cache.js";
import { rawAccessOf } from "./raw-access.js";
import { EncryptedSerializer, MsgpackSerializer } from "../serde/index.js";
import { applyChanges } from "../sync/pull.js";
import { readThread } from "../sync/push.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const KEY = new Uint8Array(32).map((_, i) => i * 5 + 3);
const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };
const root = (thread_id: string, checkpoint_id?: string): RunnableConfig => ({
  configurable: { thread_id, checkpoint_ns: "", ...(checkpoint_id ? { checkpoint_id } : {}) },
});

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

/** Savers on one database, as tabs of one origin; `serde` made per saver. */
async function tabs(count: number, encrypted = false): Promise<IndexedDBSaver[]> {
  const dbName = freshDbName("fresh");
  const savers: IndexedDBSaver[] = [];
  for (let i = 0; i < count; i++) {
    const serde = encrypted ? await EncryptedSerializer.fromRawKey(KEY) : undefined;
    savers.push(track(new IndexedDBSaver({ dbName, ...(serde ? { serde } : {}) })));
  }
  return savers;
}

/** Counts the read transactions `saver` opens from now on. */
function countReads(saver: IndexedDBSaver): () => number {
  const db = contextOf(saver)!.db;
  const spy = vi.spyOn(db, "read");
  return () => spy.mock.calls.length;
}

/**
 * Puts two checkpoints on thread "t" (values `a`, `b`; the second changes
 * only `a`) with a pending write on the second, reads the latest once, and
 * checks that the next read is answered from memory. Returns the second's config.
 */
async function primed(saver: IndexedDBSaver): Promise<RunnableConfig> {
  const first = await saver.put(root("t"), checkpoint(uuid6(0), { a: "a0", b: "b0" }, { a: 1, b: 1 }), meta, {
    a: 1,
    b: 1,
  });
  await saver.getTuple(root("t"));
  const second = await saver.put(first, checkpoint(uuid6(0), { a: "a1", b: "b0" }, { a: 2, b: 1 }), meta, { a: 2 });
  await saver.putWrites(second, [["a", "pending"]], "task-1");
  const reads = countReads(saver);
  const tuple = await saver.getTuple(root("t"));
  expect(reads()).toBe(0);
  expect(freshSize(contextOf(saver)!)).toBe(1);
  expect(tuple?.checkpoint.channel_values).toEqual({ a: "a1", b: "b0" });
  expect(tuple?.pendingWrites).toEqual([["task-1", "a", "pending"]]);
  vi.restoreAllMocks();
  return second;
}

afterEach(() => vi.restoreAllMocks());

describe("getTuple of the latest checkpoint from memory", () => {
  it("answers this saver's own latest put and writes without a read, as stored", async () => {
    const [saver] = await tabs(1);
    const second = await primed(saver);
    // What a read of the database returns is what memory returned.
    const [reader] = await tabs(1);
    const other = track(new IndexedDBSaver({ dbName: saver.dbName, freshReads: false }));
    void reader;
    const stored = await other.getTuple(root("t"));
    expect(await saver.getTuple(root("t"))).toEqual(stored);
    expect(stored?.config).toEqual(second);
  });

  it("keeps its own put of a version stored without a value (a graph's consumed trigger channel): the next latest read needs no read either", async () => {
    const [saver] = await tabs(1);
    const second = await primed(saver);
    // `c` gets a version and no value, as LangGraph's `__start__` and branch channels do at each step.
    const versions = { a: 3, b: 1, c: 1 };
    const third = await saver.put(second, checkpoint(uuid6(0), { a: "a2", b: "b0" }, versions), meta, { a: 3, c: 1 });
    const reads = countReads(saver);
    const kept = await saver.getTuple(root("t"));
    expect(reads()).toBe(0);
    vi.restoreAllMocks();
    const other = track(new IndexedDBSaver({ dbName: saver.dbName, freshReads: false }));
    const stored = await other.getTuple(root("t"));
    expect(kept).toEqual(stored);
    expect(stored?.config).toEqual(third);
    expect(stored?.checkpoint.channel_values).toEqual({ a: "a2", b: "b0" });
  });

  it("keeps the window while writes come for a checkpoint not put yet (async durability), then that put with them", async () => {
    const [saver] = await tabs(1);
    const second = await primed(saver);
    const other = track(new IndexedDBSaver({ dbName: saver.dbName, freshReads: false }));
    const id = uuid6(0);
    const next: RunnableConfig = { configurable: { ...second.configurable, checkpoint_id: id } };
    await saver.putWrites(next, [["a", "early"]], "task-2");
    const reads = countReads(saver);
    expect(await saver.getTuple(root("t"))).toEqual(await other.getTuple(root("t")));
    await saver.put(second, checkpoint(id, { a: "a2", b: "b0" }, { a: 3, b: 1 }), meta, { a: 3 });
    const kept = await saver.getTuple(root("t"));
    expect(reads()).toBe(0);
    vi.restoreAllMocks();
    expect(kept).toEqual(await other.getTuple(root("t")));
    expect(kept?.pendingWrites).toEqual([["task-2", "a", "early"]]);
  });

  for (const encrypted of [false, true]) {
    const label = encrypted ? " (encrypted)" : "";
    it(`sees another tab's newer checkpoint${label}`, async () => {
      const [saver, other] = await tabs(2, encrypted);
      const second = await primed(saver);
      const third = uuid6(0);
      await other.put(second, checkpoint(third, { a: "theirs", b: "b0" }, { a: 3, b: 1 }), meta, { a: 3 });
      const tuple = await saver.getTuple(root("t"));
      expect(tuple?.checkpoint.id).toBe(third);
      expect(tuple?.checkpoint.channel_values).toEqual({ a: "theirs", b: "b0" });
      expect(tuple?.pendingWrites).toEqual([]);
    });

    it(`sees another tab's pending writes on the latest, and its delete${label}`, async () => {
      const [saver, other] = await tabs(2, encrypted);
      const second = await primed(saver);
      await other.putWrites(second, [["b", "theirs"]], "task-2");
      expect((await saver.getTuple(root("t")))?.pendingWrites).toEqual([
        ["task-1", "a", "pending"],
        ["task-2", "b", "theirs"],
      ]);
      await saver.put(second, checkpoint(uuid6(0), { a: "a2", b: "b0" }, { a: 4, b: 1 }), meta, { a: 4 });
      await other.deleteThread("t");
      expect(await saver.getTuple(root("t"))).toBeUndefined();
    });
  }

  it("a change another tab announces drops what is kept of its thread only", async () => {
    const [saver] = await tabs(1);
    await primed(saver);
    await saver.put(root("u"), checkpoint(uuid6(0), { a: "u0" }, { a: 1 }), meta, { a: 1 });
    await saver.getTuple(root("u")); // a read keeps its window
    expect(freshSize(contextOf(saver)!)).toBe(2);
    // Another tab's notice of a change to "u" (its feed on the same database; no write, so the lease stays).
    const elsewhere = new ChangeFeed(contextOf(saver)!.db.name);
    try {
      elsewhere.emit({ threadId: "u", kind: "delete" });
      await expect.poll(() => freshSize(contextOf(saver)!)).toBe(1);
      const reads = countReads(saver);
      expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "a1", b: "b0" });
      expect(reads()).toBe(0);
      await saver.getTuple(root("u"));
      expect(reads()).toBe(1);
    } finally {
      elsewhere.close();
    }
  });

  it("hands the lease back and forth: each saver sees the other's every write", async () => {
    const [a, b] = await tabs(2);
    let config = await primed(a);
    for (let i = 0; i < 4; i++) {
      const [writer, reader] = i % 2 === 0 ? [b, a] : [a, b];
      const id = uuid6(0);
      config = await writer.put(config, checkpoint(id, { a: `turn ${i}`, b: "b0" }, { a: 10 + i, b: 1 }), meta, {
        a: 10 + i,
      });
      expect((await reader.getTuple(root("t")))?.checkpoint.id).toBe(id);
      expect((await writer.getTuple(root("t")))?.checkpoint.id).toBe(id);
    }
  });

  it("sees what sync's apply path stored", async () => {
    const [saver] = await tabs(1);
    const second = await primed(saver);
    // Another device's next checkpoint, as a pull brings it.
    const [source] = await tabs(1);
    const newer = uuid6(0);
    await source.put(root("t"), checkpoint(uuid6(0), { a: "a0", b: "b0" }, { a: 1, b: 1 }), meta, { a: 1, b: 1 });
    await source.put(second, checkpoint(newer, { a: "pulled", b: "b0" }, { a: 5, b: 1 }), meta, { a: 5, b: 1 });
    const pulled = (await readThread(rawAccessOf(source)!, "t")).find((c) => c.wire.checkpoint_id === newer)!;
    await applyChanges(rawAccessOf(saver)!, [{ kind: "checkpoint", seq: 1, checkpoint: pulled.wire }], {
      scope: "http://sync.invalid\u0000u",
      cursor: 1,
    });
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(newer);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "pulled", b: "b0" });
  });

  it("sees a value a pull stores later for a checkpoint it holds without one, on a row listing nothing absent", async () => {
    const [saver] = await tabs(1);
    const scope = "http://sync.invalid\u0000u";
    // Another device's checkpoint naming a@1 without a value; pulled, its row lists nothing as absent.
    const [source] = await tabs(1);
    await source.put(root("t"), checkpoint(uuid6(0), { b: "b0" }, { a: 1, b: 1 }), meta, { a: 1, b: 1 });
    const [pulled] = await readThread(rawAccessOf(source)!, "t");
    await applyChanges(rawAccessOf(saver)!, [{ kind: "checkpoint", seq: 1, checkpoint: pulled!.wire }], {
      scope,
      cursor: 1,
    });
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ b: "b0" });
    const reads = countReads(saver);
    await saver.getTuple(root("t"));
    expect(reads(), "answered from memory").toBe(0);
    // The same checkpoint again, now with a value at a@1 (a device that stored one since, say a delta snapshot).
    const value = await new MsgpackSerializer().dumpsTyped("late");
    const blobs = [...pulled!.wire.blobs, { channel: "a", version: 1, value }];
    await applyChanges(rawAccessOf(saver)!, [{ kind: "checkpoint", seq: 2, checkpoint: { ...pulled!.wire, blobs } }], {
      scope,
      cursor: 2,
    });
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "late", b: "b0" });
  });

  it("keeps nothing of a put whose transaction aborted", async () => {
    const [saver] = await tabs(1);
    const second = await primed(saver);
    const failing = uuid6(0);
    const put = IDBObjectStore.prototype.put;
    // The checkpoint row is stored, then the transaction aborts before it commits (as the browser aborts one).
    vi.spyOn(IDBObjectStore.prototype, "put").mockImplementation(function (this: IDBObjectStore, value, key) {
      const request = put.call(this, value, key);
      if ((value as { checkpoint_id?: string }).checkpoint_id === failing) {
        queueMicrotask(() => this.transaction.abort());
      }
      return request;
    });
    await expect(
      saver.put(second, checkpoint(failing, { a: "lost", b: "b0" }, { a: 6, b: 1 }), meta, { a: 6 }),
    ).rejects.toThrow();
    vi.restoreAllMocks();
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(second.configurable?.checkpoint_id);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "a1", b: "b0" });
  });

  it("gives each caller objects of its own: mutating a returned tuple changes nothing kept", async () => {
    const [saver] = await tabs(1);
    await primed(saver);
    const tuple = (await saver.getTuple(root("t")))!;
    tuple.checkpoint.channel_values.a = "mutated";
    tuple.checkpoint.channel_versions.a = 99;
    (tuple.pendingWrites as unknown[]).length = 0;
    tuple.metadata!.step = 42;
    const again = await saver.getTuple(root("t"));
    expect(again?.checkpoint.channel_values).toEqual({ a: "a1", b: "b0" });
    expect(again?.checkpoint.channel_versions).toEqual({ a: 2, b: 1 });
    expect(again?.pendingWrites).toEqual([["task-1", "a", "pending"]]);
    expect(again?.metadata?.step).toBe(1);
  });

  it("keeps its own bytes: a serializer that writes into what it reads spoils no later answer", async () => {
    const inner = new MsgpackSerializer();
    const scribbler: SerializerProtocol = {
      dumpsTyped: (value) => inner.dumpsTyped(value),
      async loadsTyped(type, bytes) {
        const value: unknown = await inner.loadsTyped(type, bytes);
        if (bytes instanceof Uint8Array) bytes.fill(0);
        return value;
      },
    };
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("fresh"), serde: scribbler }));
    await primed(saver);
    const again = await saver.getTuple(root("t"));
    expect(again?.checkpoint.channel_values).toEqual({ a: "a1", b: "b0" });
    expect(again?.pendingWrites).toEqual([["task-1", "a", "pending"]]);
  });

  it("the shipped serializer decodes the kept bytes themselves: the binary values it returns are still the caller's own", async () => {
    const [saver] = await tabs(1);
    const values = { bin: new Uint8Array([1, 2, 3]), nested: { floats: new Float64Array([0.5, 1.5]) } };
    await saver.put(root("t"), checkpoint(uuid6(0), values, { bin: 1, nested: 1 }), meta, { bin: 1, nested: 1 });
    await saver.getTuple(root("t"));
    const reads = countReads(saver);
    for (let i = 0; i < 2; i++) {
      const got = (await saver.getTuple(root("t")))!.checkpoint.channel_values as typeof values;
      expect(got).toEqual(values);
      got.bin.fill(9);
      got.nested.floats.fill(9);
    }
    expect(reads()).toBe(0);
  });

  it('copies what JsonPlusSerializer returns as stored ("bytes" rows) before a default saver decodes it from memory', async () => {
    const dbName = freshDbName("fresh");
    const writer = track(new IndexedDBSaver({ dbName, serde: new JsonPlusSerializer() }));
    const reader = track(new IndexedDBSaver({ dbName }));
    // The writer's notice comes a task or more after its put (events.ts), and drops what the reader kept
    // of "t" if it lands after the reader's read: the reader waits for it (it failed 4 runs in 12 without).
    const heard = new Promise<void>((resolve) => {
      const stop = reader.subscribe((change) => change.remote && (stop(), resolve()));
    });
    await writer.put(root("t"), checkpoint(uuid6(0), { bin: new Uint8Array([1, 2, 3]) }, { bin: 1 }), meta, { bin: 1 });
    await heard;
    // A write of its own takes the lease: its reads of "t" are then kept, and answered from memory.
    await reader.put(root("other"), checkpoint(uuid6(0), { a: "a" }, { a: 1 }), meta, { a: 1 });
    await reader.getTuple(root("t"));
    const reads = countReads(reader);
    for (let i = 0; i < 2; i++) {
      const got = (await reader.getTuple(root("t")))!.checkpoint.channel_values.bin as Uint8Array;
      expect([...got]).toEqual([1, 2, 3]);
      got.fill(9);
    }
    expect(reads()).toBe(0);
  });

  it("a subclass of MsgpackSerializer that writes into what it reads still gets copies", async () => {
    class Scribbler extends MsgpackSerializer {
      override async loadsTyped(type: string, bytes: Uint8Array | string): Promise<unknown> {
        const value = await super.loadsTyped(type, bytes);
        if (bytes instanceof Uint8Array) bytes.fill(0);
        return value;
      }
    }
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("fresh"), serde: new Scribbler() }));
    await primed(saver);
    const again = await saver.getTuple(root("t"));
    expect(again?.checkpoint.channel_values).toEqual({ a: "a1", b: "b0" });
  });

  it("with freshReads: false, reads the database every time", async () => {
    const dbName = freshDbName("fresh");
    const saver = track(new IndexedDBSaver({ dbName, freshReads: false }));
    const config = await saver.put(root("t"), checkpoint(uuid6(0), { a: "a0" }, { a: 1 }), meta, { a: 1 });
    await saver.getTuple(root("t"));
    const reads = countReads(saver);
    expect((await saver.getTuple(root("t")))?.config).toEqual(config);
    expect(reads()).toBe(1);
  });
});
