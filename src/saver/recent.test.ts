/**
 * `getTuple` of a namespace's latest checkpoint asks for the details of the
 * checkpoint this saver put last together with the latest row (recent.ts).
 * The guess must never leak into a read: another saver (another tab) that
 * puts after it, re-puts that very checkpoint with other values, deletes the
 * thread or adds pending writes is what the read returns. Runs in Node
 * (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { EncryptedSerializer, MsgpackSerializer } from "../serde/index.js";
import {
  KEPT_BYTES_LIMIT,
  KEPT_VALUE_LIMIT,
  changeMark,
  forgetRecent,
  keptValues,
  recentPut,
  rememberPut,
} from "./recent.js";
import { ChangeFeed } from "./events.js";
import type { SaverContext } from "./context.js";
import type { BlobRow } from "../rows/shapes.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();

const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };
const runMeta = (run_id: string) => ({ ...meta, run_id }) as CheckpointMetadata;
const root = (thread_id: string, checkpoint_id?: string): RunnableConfig => ({
  configurable: { thread_id, checkpoint_ns: "", ...(checkpoint_id ? { checkpoint_id } : {}) },
});

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

/** Two savers on one database: this tab and another. */
function twoTabs(): [IndexedDBSaver, IndexedDBSaver] {
  const dbName = freshDbName("recent");
  return [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
}

describe("getTuple of the latest checkpoint after this saver's own put", () => {
  it("returns the checkpoint and values this saver put, with writes added after the put", async () => {
    const [saver] = twoTabs();
    const config = await saver.put(root("t"), checkpoint(uuid6(0), { a: "one", b: 1 }, { a: 1, b: 1 }), meta, {
      a: 1,
      b: 1,
    });
    await saver.putWrites(config, [["a", "pending"]], "task-1");
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "one", b: 1 });
    expect(tuple?.pendingWrites).toEqual([["task-1", "a", "pending"]]);
  });

  it("returns another tab's newer checkpoint, not the one this saver remembers", async () => {
    const [saver, other] = twoTabs();
    const first = await saver.put(root("t"), checkpoint(uuid6(0), { a: "mine" }, { a: 1 }), meta, { a: 1 });
    const theirs = uuid6(1);
    await other.put(first, checkpoint(theirs, { a: "theirs" }, { a: 2 }), meta, { a: 2 });
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(theirs);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "theirs" });
  });

  it("returns another tab's newer checkpoint with the same versions, and its own pending writes", async () => {
    const [saver, other] = twoTabs();
    const first = await saver.put(root("t"), checkpoint(uuid6(0), { a: "same" }, { a: 1 }), meta, { a: 1 });
    await saver.putWrites(first, [["a", "written on the first"]], "task-1");
    // No channel changed: the newer checkpoint has the very versions this saver remembers.
    const theirs = uuid6(1);
    const second = await other.put(first, checkpoint(theirs, { a: "same" }, { a: 1 }), meta, {});
    await other.putWrites(second, [["a", "written on the second"]], "task-2");
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(theirs);
    expect(tuple?.pendingWrites).toEqual([["task-2", "a", "written on the second"]]);
  });

  it("reads the row as it is now when another tab put the same checkpoint again with other versions", async () => {
    const [saver, other] = twoTabs();
    const id = uuid6(0);
    await saver.put(root("t"), checkpoint(id, { a: "old" }, { a: 1 }), meta, { a: 1 });
    // The same id, the value at a new version: the blob of version 1 is still stored.
    await other.put(root("t"), checkpoint(id, { a: "new" }, { a: 2 }), meta, { a: 2 });
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.channel_versions).toEqual({ a: 2 });
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "new" });
  });

  it("returns nothing once another tab deleted the thread, and the new run's checkpoint after it", async () => {
    const [saver, other] = twoTabs();
    await saver.put(root("t"), checkpoint(uuid6(0), { a: "before" }, { a: 1 }), meta, { a: 1 });
    await other.deleteThread("t");
    expect(await saver.getTuple(root("t"))).toBeUndefined();
    const next = uuid6(5);
    await other.put(root("t"), checkpoint(next, { a: "after" }, { a: 1 }), meta, { a: 1 });
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(next);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "after" });
  });

  it("keeps each namespace's own latest apart", async () => {
    const [saver] = twoTabs();
    await saver.put(root("t"), checkpoint(uuid6(0), { a: "root" }, { a: 1 }), meta, { a: 1 });
    await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: "child:1" } },
      checkpoint(uuid6(1), { a: "child" }, { a: 1 }),
      meta,
      { a: 1 },
    );
    const rootTuple = await saver.getTuple(root("t"));
    const childTuple = await saver.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "child:1" } });
    expect(rootTuple?.checkpoint.channel_values).toEqual({ a: "root" });
    expect(childTuple?.checkpoint.channel_values).toEqual({ a: "child" });
  });
});

/**
 * A context with only what recent.ts uses (the change feed), and a way to
 * remember checkpoint "c" of thread "t" with one kept value under a mark.
 */
function feedContext(prefix: string) {
  const feed = new ChangeFeed(freshDbName(prefix));
  const ctx = { feed } as unknown as SaverContext;
  const blob: BlobRow = {
    thread_id: "t",
    checkpoint_ns: "",
    channel: "a",
    version: 1,
    value: ["msgpack", new Uint8Array(4)],
  };
  const remember = (mark: number) =>
    rememberPut(
      ctx,
      "t",
      "",
      {
        checkpointId: "c",
        createdAt: 1,
        channelVersions: { a: 1 },
        values: keptValues(new MsgpackSerializer(), { a: 1 }, [blob]),
      },
      mark,
    );
  return { feed, ctx, remember };
}

/**
 * A value too large to sit inline in its checkpoint's row (row format 2):
 * these tests are about values in blob rows, which another checkpoint naming
 * the same version can rewrite.
 */
const large = (text: string) => text.padEnd(4096, ".");

/** Counts the `get` requests on the blobs store from now on. */
function countBlobGets(): () => number {
  let count = 0;
  const original = IDBObjectStore.prototype.get;
  vi.spyOn(IDBObjectStore.prototype, "get").mockImplementation(function (this: IDBObjectStore, query) {
    if (this.name === "blobs") count += 1;
    return original.call(this, query);
  });
  return () => count;
}

describe("getTuple of the latest checkpoint reads no value this saver kept", () => {
  afterEach(() => vi.restoreAllMocks());

  it("keeps the values it put", async () => {
    const [saver, other] = twoTabs();
    await saver.put(root("t"), checkpoint(uuid6(0), { a: large("kept"), b: large("b") }, { a: 1, b: 1 }), meta, {
      a: 1,
      b: 1,
    });
    const gets = countBlobGets();
    const tuple = await saver.getTuple(root("t"));
    expect(gets()).toBe(0);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: large("kept"), b: large("b") });
    // Another saver on the database knows nothing and reads both: the count is real.
    expect((await other.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: large("kept"), b: large("b") });
    expect(gets()).toBe(2);
  });

  it("reads what a fresh reader reads when the checkpoint before went with its blobs", async () => {
    const [saver, other] = twoTabs();
    const first = await saver.put(root("t"), checkpoint(uuid6(0), { a: "A" }, { a: 1 }), runMeta("r1"), { a: 1 });
    // Another tab deletes the first checkpoint's run, and its blob with it, before this tab's run
    // puts the next: that put finds its parent gone and stores the value it did not change too.
    await other.deleteForRuns(["r1"]);
    await saver.put(first, checkpoint(uuid6(1), { a: "A" }, { a: 1 }), runMeta("r2"), {});
    const fresh = await other.getTuple(root("t"));
    expect(fresh?.checkpoint.channel_values).toEqual({ a: "A" });
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "A" });
  });

  it("reads the values again once another tab put the same checkpoint again", async () => {
    const [saver, other] = twoTabs();
    const id = uuid6(0);
    await saver.put(root("t"), checkpoint(id, { a: "old" }, { a: 1 }), meta, { a: 1 });
    // A millisecond later (the stamp's resolution across savers), the same id and versions with
    // another value: the row's stamp tells it apart, before any notice arrives.
    await new Promise((resolve) => setTimeout(resolve, 2));
    await other.put(root("t"), checkpoint(id, { a: "new" }, { a: 1 }), meta, { a: 1 });
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "new" });
  });

  it("drops what it kept for a thread once another tab announces a change to it", async () => {
    const [saver, other] = twoTabs();
    const older = uuid6(0);
    const newer = uuid6(1);
    await saver.put(root("t"), checkpoint(newer, { a: large("kept") }, { a: 1 }), meta, { a: 1 });
    // An older checkpoint naming the same version with another value (versions of the caller's own
    // making): the newest row is unchanged, only its value's bytes are not.
    await other.put(root("t"), checkpoint(older, { a: large("rewritten") }, { a: 1 }), meta, { a: 1 });
    expect((await other.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: large("rewritten") });
    await vi.waitFor(async () =>
      expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: large("rewritten") }),
    );
  });

  it("drops what it kept for a thread it deletes, copies into or prunes", async () => {
    const [saver, other] = twoTabs();
    const [older, newer] = [uuid6(0), uuid6(1)];
    await saver.put(root("t"), checkpoint(newer, { a: large("old") }, { a: 1 }), meta, { a: 1 });
    await saver.copyThread("t", "s");
    // An older checkpoint naming the same version with another value rewrites the copy's blob.
    await saver.put(root("s"), checkpoint(older, { a: large("new") }, { a: 1 }), meta, { a: 1 });
    await saver.deleteThread("t");
    // The newest row comes back with its very id, versions and stamp.
    await saver.copyThread("s", "t");
    expect((await other.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: large("new") });
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: large("new") });
  });

  it("forgets what it kept when closed, since other tabs' notices no longer reach it", async () => {
    const [saver, other] = twoTabs();
    const [older, newer] = [uuid6(0), uuid6(1)];
    await saver.put(root("t"), checkpoint(newer, { a: large("kept") }, { a: 1 }), meta, { a: 1 });
    await saver.close();
    await other.put(root("t"), checkpoint(older, { a: large("rewritten") }, { a: 1 }), meta, { a: 1 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: large("rewritten") });
  });

  it("keeps no values read or stored before a change notice that arrived since", () => {
    const { feed, ctx, remember } = feedContext("recent-mark");
    remember(changeMark(ctx));
    expect(recentPut(ctx, "t", "")?.values?.blobs.size).toBe(1);
    // A read or a commit, then (say while a journal records it) a notice of another change to the thread.
    const mark = changeMark(ctx);
    feed.emit({ threadId: "t", kind: "delete" });
    remember(mark);
    expect(recentPut(ctx, "t", "")?.checkpointId).toBe("c");
    expect(recentPut(ctx, "t", "")?.values).toBeUndefined();
    feed.close();
  });

  it("keeps no values read or stored across a close", () => {
    const { feed, ctx, remember } = feedContext("recent-close");
    const mark = changeMark(ctx);
    // The saver closes while a put or a read is in flight.
    forgetRecent(ctx);
    remember(mark);
    expect(recentPut(ctx, "t", "")?.values).toBeUndefined();
    feed.close();
  });

  it("keeps the values it read", async () => {
    const [saver, other] = twoTabs();
    // The other tab's notice comes a task or more after its put (events.ts): one that lands during the read
    // rightly keeps nothing of it, so the read waits for it.
    const heard = new Promise<void>((resolve) => {
      const stop = saver.subscribe((change) => change.remote && (stop(), resolve()));
    });
    await other.put(root("t"), checkpoint(uuid6(0), { a: "theirs" }, { a: 1 }), meta, { a: 1 });
    await heard;
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "theirs" });
    const gets = countBlobGets();
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "theirs" });
    expect(gets()).toBe(0);
  });

  it("keeps a value only under the version it was stored at", async () => {
    const [saver] = twoTabs();
    // The value goes in at version 1, while the checkpoint says version 2: nothing is stored at 2.
    await saver.put(root("t"), checkpoint(uuid6(0), { a: "one" }, { a: 2 }), meta, { a: 1 });
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({});
  });

  it("does not carry a value over to another version of its channel", async () => {
    const [saver] = twoTabs();
    const first = await saver.put(root("t"), checkpoint(uuid6(0), { a: "one" }, { a: 1 }), meta, { a: 1 });
    // The child says a is at version 2 but stores no value for it: a has no value there.
    await saver.put(first, checkpoint(uuid6(1), {}, { a: 2 }), meta, {});
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({});
  });

  it("reads a value larger than the limit again, and forgets the oldest values past the byte budget", async () => {
    const [saver] = twoTabs();
    const big = "x".repeat(KEPT_VALUE_LIMIT + 1);
    await saver.put(root("big"), checkpoint(uuid6(0), { a: big, b: "small" }, { a: 1, b: 1 }), meta, { a: 1, b: 1 });
    let gets = countBlobGets();
    expect((await saver.getTuple(root("big")))?.checkpoint.channel_values).toEqual({ a: big, b: "small" });
    expect(gets()).toBe(1);
    vi.restoreAllMocks();

    // Values just under the limit in enough threads to pass the budget: the first thread's go.
    const value = "y".repeat(KEPT_VALUE_LIMIT - 1024);
    const threads = Math.ceil(KEPT_BYTES_LIMIT / (KEPT_VALUE_LIMIT - 1024)) + 1;
    for (let i = 0; i < threads; i++) {
      await saver.put(root(`t${i}`), checkpoint(uuid6(i), { a: value }, { a: 1 }), meta, { a: 1 });
    }
    gets = countBlobGets();
    expect((await saver.getTuple(root(`t${threads - 1}`)))?.checkpoint.channel_values).toEqual({ a: value });
    expect(gets()).toBe(0);
    expect((await saver.getTuple(root("t0")))?.checkpoint.channel_values).toEqual({ a: value });
    expect(gets()).toBe(1);
  });

  it("keeps its own copy of the bytes, which a decoder may write into", async () => {
    const inner = new MsgpackSerializer();
    // Reads, then scribbles over the bytes it was given (as an in-place decryption would).
    const scribbling = {
      dumpsTyped: (value: unknown) => inner.dumpsTyped(value),
      loadsTyped: async (type: string, data: Uint8Array | string) => {
        const value = await inner.loadsTyped(type, data);
        if (data instanceof Uint8Array) data.fill(0);
        return value;
      },
    };
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("recent-scribble"), serde: scribbling }));
    await saver.put(root("t"), checkpoint(uuid6(0), { a: "intact" }, { a: 1 }), meta, { a: 1 });
    for (let read = 0; read < 3; read++) {
      expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "intact" });
    }
  });

  it("leaves the kept bytes unused once a new key seals the values", async () => {
    const saver = track(
      new IndexedDBSaver({
        dbName: freshDbName("recent-key"),
        serde: await EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(1)),
      }),
    );
    await saver.put(root("t"), checkpoint(uuid6(0), { a: "secret" }, { a: 1 }), meta, { a: 1 });
    // Every value is sealed again under a fresh data key; the kept bytes are under the old one.
    await saver.rekey();
    const gets = countBlobGets();
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: "secret" });
    expect(gets()).toBe(1);
  });
});
