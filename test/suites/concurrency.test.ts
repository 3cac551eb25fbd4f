/**
 * Several connections to one database (reliability issue, part 2, within one
 * page; `tabs.browser.test.ts` does the same across pages):
 *
 * - two IndexedDBSaver instances on one database run real graphs of 200
 *   supersteps each, on different threads and on the same thread, at the
 *   same time, while a third instance keeps listing: no checkpoint or write
 *   lost, no exception, every `list` answer consistent, `listThreads` right;
 * - puts of one thread that commit out of id order (a slow serializer in one
 *   tab) leave `listThreads` naming the newest checkpoint, as `getTuple` does;
 * - another connection opens a newer schema version: the saver steps aside at
 *   once (no `blocked`), and its next call either reopens transparently (the
 *   upgrade was aborted, or the database deleted) or fails with an error that
 *   names the newer version, never hangs;
 * - a newer saver blocked by an old connection that ignores `versionchange`
 *   fails with `DatabaseBlockedError` after `blockedTimeoutMs`, not a hang,
 *   also when the app retries while still blocked, and works once that
 *   connection closes;
 * - a connection lost without a `close` event (WebKit) is replaced on the
 *   next call, as idb/database.ts's one-retry rule promises (saver, Database layer,
 *   IndexedDBStore).
 *
 * Runs in Node (fake-indexeddb) and Chromium.
 */
import {
  emptyCheckpoint,
  uuid6,
  type CheckpointMetadata,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { Database } from "../../src/idb/database.js";
import { SAVER_UPGRADES, type SaverSchema } from "../../src/saver/schema.js";
import { DatabaseBlockedError, IndexedDBCheckpointError } from "../../src/core/errors.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { byDepth } from "../support/depth.js";
import { checkEverything, runSupersteps, watchLists, type Recorded } from "../support/reliability/supersteps.js";
import { losableFactory, newerSchemaFactory } from "../support/reliability/factories.js";
import { captureUnhandledRejections, describeReasons, openRaw } from "../support/reliability/raw.js";

/**
 * Supersteps per saver: 80 at the fast depth, 200 at the full depth
 * (docs/testing.md). 80 puts take one thread past a page of `list()` (64).
 */
const STEPS = byDepth(80, 200);
const savers: IndexedDBSaver[] = [];
const names = new Set<string>();

afterEach(async () => {
  await Promise.all(savers.splice(0).map((saver) => saver.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
  names.clear();
});

function newSaver(
  dbName: string,
  options: Partial<ConstructorParameters<typeof IndexedDBSaver>[0]> = {},
): IndexedDBSaver {
  names.add(dbName);
  const saver = new IndexedDBSaver({ dbName, ...options });
  savers.push(saver);
  return saver;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `promise`, or a "hangs" error after `ms`. */
function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    sleep(ms).then(() => {
      throw new Error(`${what}: no answer after ${ms} ms (it hangs)`);
    }),
  ]);
}

const root = (thread_id: string) => ({ configurable: { thread_id, checkpoint_ns: "" } });
const meta = (step: number) => ({ source: "loop", step, parents: {} }) as CheckpointMetadata;

async function putOne(saver: IndexedDBSaver, threadId: string, value: unknown) {
  const checkpoint = {
    ...emptyCheckpoint(),
    id: uuid6(0),
    channel_values: { v: value },
    channel_versions: { v: saver.getNextVersion(undefined) },
  };
  return saver.put(root(threadId), checkpoint, meta(0), { v: checkpoint.channel_versions.v });
}

describe("two savers in one page, writing at once", () => {
  for (const shared of [false, true]) {
    it(`${STEPS} supersteps each on ${shared ? "the same thread" : "different threads"}, with a third saver listing meanwhile`, async () => {
      const dbName = freshDbName("concurrency");
      const [one, two, reader] = [newSaver(dbName), newSaver(dbName), newSaver(dbName)];
      const unhandled = captureUnhandledRejections();
      const threads = shared ? ["shared", "shared"] : ["left", "right"];
      // The recorders fill in as the writers go, and the watcher reads them live.
      const recorded: Recorded[] = [
        { puts: [], writes: [] },
        { puts: [], writes: [] },
      ];
      const started = performance.now();
      const writers = Promise.all([
        runSupersteps(one, threads[0]!, "one", STEPS, recorded[0]),
        runSupersteps(two, threads[1]!, "two", STEPS, recorded[1]),
      ]);
      const watched = await watchLists(reader, [...new Set(threads)], recorded, writers);
      await writers;
      const elapsed = performance.now() - started;

      expect(watched.problem).toBeUndefined();
      expect(watched.lists).toBeGreaterThan(0);
      // A superstep is one put; plus the input checkpoint and the first loop checkpoint.
      for (const r of recorded) expect(r.puts.length).toBe(STEPS + 2);
      expect(await checkEverything(reader, recorded)).toBeUndefined();
      expect(describeReasons(await unhandled.stop())).toEqual([]);
      console.info(
        `[concurrency] 2 x ${STEPS} supersteps on ${shared ? "one thread" : "two threads"}: ${elapsed.toFixed(0)} ms, ${watched.lists} concurrent lists checked`,
      );
    }, 60_000);
  }
});

describe("puts of one thread that commit out of id order", () => {
  it("leave listThreads naming the newest checkpoint, as getTuple does", async () => {
    const dbName = freshDbName("out-of-order");
    // Tab A serializes slowly (a big state, a slow device, encryption); tab B does not.
    const base = new MsgpackSerializer();
    const slow: SerializerProtocol = {
      dumpsTyped: async (value) => {
        await sleep(50);
        return base.dumpsTyped(value);
      },
      loadsTyped: (type, data) => base.loadsTyped(type, data),
    };
    const a = newSaver(dbName, { serde: slow });
    const b = newSaver(dbName);
    const first = await putOne(b, "t", "start");
    const older = { ...emptyCheckpoint(), id: uuid6(0), channel_values: { v: "from A" }, channel_versions: { v: 2 } };
    const newer = { ...emptyCheckpoint(), id: uuid6(0), channel_values: { v: "from B" }, channel_versions: { v: 3 } };
    expect(older.id < newer.id).toBe(true);
    // A's put starts first (its id is older) but commits after B's.
    await Promise.all([
      a.put(first, older, meta(1), { v: 2 }),
      sleep(5).then(() => b.put(first, newer, meta(1), { v: 3 })),
    ]);

    const latest = await b.getTuple(root("t"));
    expect(latest?.checkpoint.id).toBe(newer.id);
    const threads = [];
    for await (const info of b.listThreads()) threads.push(info);
    expect(threads.map((info) => [info.threadId, info.latestCheckpointId, info.checkpointCount])).toEqual([
      ["t", newer.id, 3],
    ]);
  });
});

/** A newer saver's blocked timeout in a takeover: had it been blocked, its read would have taken at least this. */
const TAKEOVER_BLOCKED_MS = 10_000;
/** Bounds a wait for what never comes (a blocked call that hangs): it measures nothing. */
const HANG_MS = 30_000;

/** One version above today's schema: a newer release of the package. */
const NEWER = SAVER_UPGRADES.length + 1;

describe("a newer schema version opened by another connection", () => {
  it("closes the saver's connection at once; its next call names the newer version, and it reopens once that database is gone", async () => {
    const dbName = freshDbName("versionchange");
    const saver = newSaver(dbName);
    await putOne(saver, "t", "kept");

    let blocked = false;
    const started = performance.now();
    const newer = await openRaw(
      dbName,
      NEWER,
      (db) => db.createObjectStore("added_in_v2"),
      indexedDB,
      () => (blocked = true),
    );
    const upgradeMs = performance.now() - started;
    // Not blocked: the saver stepped aside on `versionchange`.
    newer.onversionchange = () => newer.close();
    expect(blocked).toBe(false);
    expect(newer.version).toBe(NEWER);

    const error = await saver.getTuple(root("t")).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(IndexedDBCheckpointError);
    expect(String((error as Error).message)).toMatch(/newer version/);
    expect((error as Error & { cause?: { name?: string } }).cause?.name).toBe("VersionError");
    newer.close();

    await deleteDatabase(dbName);
    // Transparent: the next call opens (a fresh database) and works.
    expect(await saver.getTuple(root("t"))).toBeUndefined();
    await putOne(saver, "t", "again");
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: "again" });
    console.info(`[concurrency] upgrade to v${NEWER} past an open saver: ${upgradeMs.toFixed(1)} ms, not blocked`);
  });

  it("reopens transparently, data intact, when the other connection's upgrade is aborted", async () => {
    const dbName = freshDbName("versionchange-abort");
    const saver = newSaver(dbName);
    await putOne(saver, "t", "kept");
    const failed = await openRaw(dbName, NEWER, (_db, tx) => tx.abort()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((failed as Error | undefined)?.name).toBe("AbortError");
    // The saver's connection was closed for that upgrade; the next call reopens today's version.
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: "kept" });
    await putOne(saver, "u", "new");
    expect((await saver.getTuple(root("u")))?.checkpoint.channel_values).toEqual({ v: "new" });
  });

  it("reopens transparently when the database is deleted from another connection", async () => {
    const dbName = freshDbName("versionchange-delete");
    const saver = newSaver(dbName);
    const other = newSaver(dbName);
    await putOne(saver, "t", "gone soon");
    expect((await other.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: "gone soon" });
    let blocked = false;
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase(dbName);
      request.onblocked = () => (blocked = true);
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    });
    expect(blocked).toBe(false);
    expect(await saver.getTuple(root("t"))).toBeUndefined();
    await putOne(other, "t", "fresh");
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: "fresh" });
  });

  it("lets the newer saver take over: the older saver's connection closes, the newer one upgrades and reads the data", async () => {
    const dbName = freshDbName("versionchange-saver");
    const older = newSaver(dbName);
    await putOne(older, "t", "from v1");
    const newer = newSaver(dbName, { indexedDB: newerSchemaFactory(), blockedTimeoutMs: TAKEOVER_BLOCKED_MS });
    const started = performance.now();
    expect((await newer.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: "from v1" });
    // Without waiting: a newer saver blocked by the older one would have waited out its blocked timeout (then
    // failed). Before, a bound of 1 s, a guess at the speed that a loaded machine could miss.
    expect(performance.now() - started).toBeLessThan(TAKEOVER_BLOCKED_MS);
    await expect(older.getTuple(root("t"))).rejects.toThrow(/newer version/);
  });
});

describe("a blocked upgrade", () => {
  it("fails with DatabaseBlockedError after blockedTimeoutMs instead of hanging, again on retry, and works once the old connection closes", async () => {
    const dbName = freshDbName("blocked");
    const v1 = newSaver(dbName);
    await putOne(v1, "t", "v1 data");
    await v1.close();
    // An old tab that keeps version 1 open and ignores `versionchange`.
    const stubborn = await openRaw(dbName);
    let asked = 0;
    stubborn.onversionchange = () => (asked += 1);
    try {
      const blockedTimeoutMs = 300;
      const newer = newSaver(dbName, { indexedDB: newerSchemaFactory(), blockedTimeoutMs });
      const started = performance.now();
      const error = await withDeadline(newer.getTuple(root("t")), HANG_MS, "the first blocked call").then(
        () => undefined,
        (e: unknown) => e,
      );
      const waited = performance.now() - started;
      expect(error).toBeInstanceOf(DatabaseBlockedError);
      expect(String((error as Error).message)).toMatch(/blocked for 300 ms/);
      // Its timer gave the error (nothing else does), not before blockedTimeoutMs; that it came at all is
      // the "instead of hanging". (Before, also a bound of blockedTimeoutMs + 2 s, which a loaded machine overran.)
      expect(waited).toBeGreaterThanOrEqual(blockedTimeoutMs - 20);
      expect(asked).toBeGreaterThan(0);

      // The app retries while the old tab is still open: its open queues
      // behind the first one (still pending) and gets no `blocked` event of
      // its own; it must still give up after blockedTimeoutMs.
      const again = await withDeadline(newer.getTuple(root("t")), HANG_MS, "a retry while still blocked").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(again).toBeInstanceOf(DatabaseBlockedError);

      stubborn.close();
      expect(
        (await withDeadline(newer.getTuple(root("t")), HANG_MS, "the call after the old tab closed"))?.checkpoint
          .channel_values,
      ).toEqual({
        v: "v1 data",
      });
      console.info(
        `[concurrency] blocked upgrade gave up after ${waited.toFixed(0)} ms (blockedTimeoutMs ${blockedTimeoutMs})`,
      );
    } finally {
      stubborn.close();
    }
  });

  it("is not caused by another IndexedDBSaver: savers close on versionchange", async () => {
    const dbName = freshDbName("not-blocked");
    const a = newSaver(dbName);
    const b = newSaver(dbName);
    await putOne(a, "t", 1);
    await b.getTuple(root("t"));
    const newer = newSaver(dbName, { indexedDB: newerSchemaFactory(), blockedTimeoutMs: 500 });
    expect((await newer.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: 1 });
  });
});

describe("a connection lost without a close event", () => {
  it("is replaced on the next call (one transparent retry), not reported as closed", async () => {
    const dbName = freshDbName("lost");
    const losable = losableFactory();
    const saver = newSaver(dbName, { indexedDB: losable.factory });
    await putOne(saver, "t", "before");
    expect(losable.opens).toBe(1);
    // WebKit: "Connection to Indexed Database server lost"; the handle is dead, no event says so.
    losable.breakAll();
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: "before" });
    expect(losable.opens).toBe(2);
    await putOne(saver, "t", "after");
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ v: "after" });
  });

  it("is replaced on the next call by the Database layer itself (what IndexedDBStore uses)", async () => {
    const dbName = freshDbName("lost-db");
    names.add(dbName);
    const losable = losableFactory();
    const db = new Database<SaverSchema>({ name: dbName, upgrades: SAVER_UPGRADES, indexedDB: losable.factory });
    try {
      await db.write(["meta"], (tx) => void tx.objectStore("meta").put({ name: "probe", value: 1 }), "write a probe");
      losable.breakAll();
      const read = await db.read(
        ["meta"],
        async (tx) => (await tx.objectStore("meta").get("probe"))?.value,
        "read the probe",
      );
      expect(read).toBe(1);
      expect(losable.opens).toBe(2);
    } finally {
      await db.close();
    }
  });

  it("is replaced on the next call of an IndexedDBStore", async () => {
    const dbName = freshDbName("lost-store");
    names.add(dbName);
    const losable = losableFactory();
    const store = new IndexedDBStore({ dbName, indexedDB: losable.factory });
    try {
      await store.put(["memories"], "k", { text: "kept" });
      losable.breakAll();
      expect((await store.get(["memories"], "k"))?.value).toEqual({ text: "kept" });
      expect(losable.opens).toBe(2);
    } finally {
      await store.close();
    }
  });
});
