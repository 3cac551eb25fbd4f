/**
 * The write lease must not outlive a holder that stops running tasks: a
 * frozen or suspended page never answers a request for it. A holder lets it
 * go by itself after its idle period, and a page lets it go when hidden,
 * frozen or unloaded. A "frozen" holder here is one whose BroadcastChannel
 * endpoints were made deaf (requests for the lease never reach it), so only
 * its own timer can let the lease go. Runs in Node (fake-indexeddb, the
 * in-process locks) and Chromium (Web Locks); the page events only where
 * there is a document.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { contextOf } from "./registry.js";
import { freshSize } from "./fresh-cache.js";
import { IDLE_RELEASE_MS, WriteLease, leaseOf } from "./write-lease.js";
import { crossTabName } from "../core/channel.js";
import { defaultLockManager } from "../core/locks.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };
const latest = { configurable: { thread_id: "t", checkpoint_ns: "" } };
// Captured before any test fakes timers: the deadlines below run on real time.
const realSetTimeout = globalThis.setTimeout;

/** A BroadcastChannel that neither delivers nor receives: the endpoint of a page that no longer runs. */
class DeafChannel {
  onmessage: unknown = null;
  postMessage(): void {}
  close(): void {}
  addEventListener(): void {}
  removeEventListener(): void {}
}

/** Runs `open` with deaf BroadcastChannels, so what it opens never hears a request. */
async function deaf<T>(open: () => Promise<T>): Promise<T> {
  vi.stubGlobal("BroadcastChannel", DeafChannel);
  try {
    return await open();
  } finally {
    vi.unstubAllGlobals();
  }
}

/** `promise`, or a rejection after `ms` of real time. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      realSetTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms),
    ),
  ]);
}

/** Settles once `condition` holds, looking every few ms of real time. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => realSetTimeout(resolve, 5));
}

/** What the leases of this realm request locks from: the browser's Web Locks, or Node's in-process stand-in. */
function lockManagerOfThisRealm(): { request: (...args: never[]) => unknown } {
  return (globalThis.navigator?.locks as LockManager | undefined) ?? defaultLockManager();
}

/** Fake timers; a saver on a fresh database whose put's lease went idle (with "mine"). */
async function idleSaver(name: string) {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  const dbName = freshDbName(name);
  const saver = track(new IndexedDBSaver({ dbName }));
  const ctx = contextOf(saver)!;
  const first = await put(saver, undefined, "mine", 1);
  await vi.advanceTimersByTimeAsync(IDLE_RELEASE_MS);
  return { dbName, saver, ctx, first };
}

/**
 * Fake timers; a reader whose put's lease went idle, and a writer that put
 * on top of it and holds the lease (with "theirs").
 */
async function readerAndHoldingWriter(name: string) {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  const dbName = freshDbName(name);
  const reader = track(new IndexedDBSaver({ dbName }));
  const writer = track(new IndexedDBSaver({ dbName }));
  const first = await put(reader, undefined, "mine", 1);
  await vi.advanceTimersByTimeAsync(IDLE_RELEASE_MS);
  const second = await within(put(writer, first.configurable?.checkpoint_id as string, "theirs", 2), 2_000, "put");
  return { reader, writer, second };
}

const leases: WriteLease[] = [];
/** A lease of `dbName` closed after the test. */
function lease(dbName: string, idleMs?: number): WriteLease {
  const made = new WriteLease(dbName, undefined, idleMs);
  leases.push(made);
  return made;
}

afterEach(() => {
  // Spies on the shared lock manager would otherwise keep counting into the next test.
  vi.restoreAllMocks();
  vi.useRealTimers();
  vi.unstubAllGlobals();
  for (const made of leases.splice(0)) made.close();
});

function put(saver: IndexedDBSaver, parent: string | undefined, value: string, version: number) {
  const configurable = { ...latest.configurable, ...(parent ? { checkpoint_id: parent } : {}) };
  const checkpoint = {
    ...emptyCheckpoint(),
    id: uuid6(0),
    channel_values: { a: value },
    channel_versions: { a: version },
  };
  return saver.put({ configurable }, checkpoint, meta, { a: version });
}

describe("a holder that stops answering", () => {
  it("lets the lease go after its idle period: another saver then gets it with no request answered", async () => {
    const dbName = freshDbName("lease-idle");
    // Control: a deaf holder with a long idle period keeps the lease, so the requests really go unanswered.
    const stuck = lease(dbName, 60_000);
    await deaf(() => stuck.ensure()!);
    const asking = lease(dbName);
    const asked = asking.ensure()!;
    await expect(within(asked, 200, "control")).rejects.toThrow(/still waiting/);
    stuck.close();
    await asked;
    asking.close();

    const holder = lease(dbName, 50);
    await deaf(() => holder.ensure()!);
    const lost = vi.fn();
    holder.onLost(lost);
    const waiter = lease(dbName);
    await within(waiter.ensure()!, 2_000, "the waiting saver");
    expect(waiter.held).toBe(true);
    expect(holder.held).toBe(false);
    expect(lost).toHaveBeenCalledTimes(1);
  });

  it("keeps it for the idle period after each use, then lets go", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const holder = lease(freshDbName("lease-use"), 100);
    await holder.ensure();
    vi.advanceTimersByTime(99);
    holder.used();
    vi.advanceTimersByTime(99);
    expect(holder.ensure()).toBeUndefined();
    vi.advanceTimersByTime(99);
    expect(holder.held).toBe(true);
    vi.advanceTimersByTime(1);
    expect(holder.held).toBe(false);
  });

  it("a frozen saver's answers from memory end with its idle period; its next read comes from IndexedDB, current", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const dbName = freshDbName("lease-frozen");
    const frozen = track(new IndexedDBSaver({ dbName }));
    const reads = vi.spyOn(contextOf(frozen)!.db, "read");
    const first = await deaf(async () => {
      const config = await put(frozen, undefined, "mine", 1);
      await frozen.getTuple(latest);
      return config;
    });
    // Served from memory, which keeps the lease another idle period.
    vi.advanceTimersByTime(IDLE_RELEASE_MS - 1);
    const before = reads.mock.calls.length;
    expect((await frozen.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "mine" });
    expect(reads.mock.calls.length).toBe(before);
    vi.advanceTimersByTime(IDLE_RELEASE_MS - 1);
    expect(freshSize(contextOf(frozen)!)).toBe(1);

    const other = track(new IndexedDBSaver({ dbName }));
    const writing = put(other, first.configurable?.checkpoint_id as string, "theirs", 2);
    await vi.advanceTimersByTimeAsync(1);
    await within(writing, 2_000, "the other saver's put");
    expect(freshSize(contextOf(frozen)!)).toBe(0);
    const tuple = await frozen.getTuple(latest);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "theirs" });
    expect(reads.mock.calls.length).toBe(before + 1);
  });
  it("a read takes an idle lease back if free: the saver answers from memory again, and another saver's write is seen", async () => {
    const { dbName, saver, ctx, first } = await idleSaver("lease-retake");
    const reads = vi.spyOn(ctx.db, "read");
    expect(leaseOf(ctx.db)?.lease.held).toBe(false);
    // The first read finds the lease idle and asks for it, in a later task: not before its caller resumes
    // (a lock request costs the main thread 0.2-0.3 ms in Chromium). A lock grant may take longer than
    // the read; once held, the next read keeps what it reads, and the one after answers from memory.
    const requests = vi.spyOn(lockManagerOfThisRealm(), "request");
    await saver.getTuple(latest);
    expect(requests).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(0);
    await within(
      until(() => leaseOf(ctx.db)?.lease.held === true),
      2_000,
      "the lease taken back",
    );
    await saver.getTuple(latest);
    const before = reads.mock.calls.length;
    expect((await saver.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "mine" });
    expect(reads.mock.calls.length).toBe(before);
    const other = track(new IndexedDBSaver({ dbName }));
    await within(put(other, first.configurable?.checkpoint_id as string, "theirs", 2), 2_000, "the other saver's put");
    expect(freshSize(ctx)).toBe(0);
    expect((await saver.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "theirs" });
  });

  it("a read's take-back still on its way when the saver closes leaves it without the lease: other savers write", async () => {
    const { dbName, saver, ctx, first } = await idleSaver("lease-retake-close");
    expect(leaseOf(ctx.db)?.lease.held).toBe(false);
    // The read finds the lease idle and asks for it; the saver closes before the grant.
    await saver.getTuple(latest);
    await saver.close();
    await new Promise((resolve) => realSetTimeout(resolve, 50));
    expect(leaseOf(ctx.db)?.lease.held).toBe(false);
    // Another saver's write is not held up by a closed saver (whose idle period never ends here).
    const other = track(new IndexedDBSaver({ dbName }));
    await within(put(other, first.configurable?.checkpoint_id as string, "theirs", 2), 2_000, "the other saver's put");
  });

  it("a read still in flight when its saver closes does not take the lease back; the next write does", async () => {
    const { saver, ctx, first } = await idleSaver("lease-read-over-close");
    const record = leaseOf(ctx.db)!;
    expect(record.lease.held).toBe(false);
    // Found idle by a read that settles only after close() (helper-42's case: before, the closed saver took
    // the lease, with a channel and page listeners reopened for it).
    const read = saver.getTuple(latest);
    await saver.close();
    await read;
    await vi.advanceTimersByTimeAsync(0);
    await new Promise((resolve) => realSetTimeout(resolve, 50));
    expect(record.lease.held).toBe(false);
    // A write reopens: the lease is taken again, and a read after its idle period takes it back.
    const second = await within(put(saver, first.configurable?.checkpoint_id as string, "again", 2), 2_000, "put");
    expect(record.lease.held).toBe(true);
    await vi.advanceTimersByTimeAsync(IDLE_RELEASE_MS);
    expect(record.lease.held).toBe(false);
    await saver.getTuple(latest);
    await vi.advanceTimersByTimeAsync(0);
    await within(
      until(() => record.lease.held),
      2_000,
      "the lease taken back",
    );
    expect(second.configurable?.checkpoint_id).toBeDefined();
  });

  it("a saver with freshReads: false never takes the lease for a read (it keeps nothing anyway)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("lease-no-fresh"), freshReads: false }));
    await put(saver, undefined, "mine", 1);
    await vi.advanceTimersByTimeAsync(IDLE_RELEASE_MS);
    for (let i = 0; i < 3; i++) await saver.getTuple(latest);
    await new Promise((resolve) => realSetTimeout(resolve, 50));
    expect(leaseOf(contextOf(saver)!.db)?.lease.held).toBe(false);
  });

  it("a read refused the lease asks again only an idle period later", async () => {
    const { reader } = await readerAndHoldingWriter("lease-refused");
    const spy = vi.spyOn(lockManagerOfThisRealm(), "request");
    const asked = () => spy.mock.calls.length;
    const read = async () => {
      expect((await reader.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "theirs" });
      await vi.advanceTimersByTimeAsync(0);
      // Time for the request to be refused.
      await new Promise((resolve) => realSetTimeout(resolve, 5));
    };
    for (let i = 0; i < 10; i++) await read();
    expect(asked()).toBe(1);
    expect(leaseOf(contextOf(reader)!.db)?.lease.held).toBe(false);
    // An idle period later (the writer's too: it lets go), a read asks again and gets it.
    await vi.advanceTimersByTimeAsync(IDLE_RELEASE_MS);
    await read();
    expect(asked()).toBe(2);
    await within(
      until(() => leaseOf(contextOf(reader)!.db)?.lease.held === true),
      2_000,
      "the lease taken back",
    );
  });

  it("a read never takes the lease from a saver that holds it: that saver's next write is seen", async () => {
    // The writer takes the lease and keeps it (its idle period never ends here).
    const { reader, writer, second } = await readerAndHoldingWriter("lease-retake-held");
    const reads = vi.spyOn(contextOf(reader)!.db, "read");
    for (let i = 0; i < 3; i++)
      expect((await reader.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "theirs" });
    // The holder writes without asking anyone: the reader must read it, not answer from memory.
    await within(put(writer, second.configurable?.checkpoint_id as string, "third", 3), 2_000, "put");
    expect((await reader.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "third" });
    expect(reads.mock.calls.length).toBe(4);
    expect(leaseOf(contextOf(reader)!.db)?.lease.held).toBe(false);
  });
});

// Decided by the platform, not by looking for the events: a browser page runs these (the chromium
// project); Node has no document, which its test asserts, so a browser build that loses them fails.
if (typeof window === "undefined") {
  it("in Node there is no page: the page events run in the chromium project", () => {
    expect(typeof document).toBe("undefined");
  });
} else
  describe("a page that is hidden, frozen or unloaded", () => {
    let visibility: DocumentVisibilityState = "visible";
    const setVisibility = (state: DocumentVisibilityState) => {
      visibility = state;
      Object.defineProperty(document, "visibilityState", { configurable: true, get: () => visibility });
    };
    afterEach(() => {
      // The own property shadows the prototype's getter; deleting it restores the page's real state.
      delete (document as { visibilityState?: unknown }).visibilityState;
    });

    for (const [event, target, state] of [
      ["visibilitychange", () => document, "hidden"],
      ["freeze", () => document, "visible"],
      ["pagehide", () => window, "visible"],
    ] as const) {
      it(`lets the lease go on ${event}`, async () => {
        const holder = lease(freshDbName("lease-page"), 60_000);
        await holder.ensure();
        const lost = vi.fn();
        holder.onLost(lost);
        setVisibility(state);
        target().dispatchEvent(new Event(event));
        expect(holder.held).toBe(false);
        expect(lost).toHaveBeenCalledTimes(1);
      });
    }

    it("keeps it on a visibilitychange to visible", async () => {
      const holder = lease(freshDbName("lease-page"), 60_000);
      await holder.ensure();
      setVisibility("visible");
      document.dispatchEvent(new Event("visibilitychange"));
      expect(holder.held).toBe(true);
    });

    it("a hidden page takes the lease for each write and gives it back right after; reads come from IndexedDB", async () => {
      setVisibility("hidden");
      const dbName = freshDbName("lease-hidden");
      const saver = track(new IndexedDBSaver({ dbName }));
      const reads = vi.spyOn(contextOf(saver)!.db, "read");
      const name = crossTabName({ kind: "write-lease", dbName });
      const heldNow = async () => (await navigator.locks.query()).held?.some((lock) => lock.name === name);
      const first = await put(saver, undefined, "one", 1);
      expect(await heldNow()).toBe(false);
      await put(saver, first.configurable?.checkpoint_id as string, "two", 2);
      expect(await heldNow()).toBe(false);
      const before = reads.mock.calls.length;
      for (let i = 1; i <= 2; i++) {
        expect((await saver.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "two" });
        expect(reads).toHaveBeenCalledTimes(before + i);
      }
      expect(freshSize(contextOf(saver)!)).toBe(0);
    });
  });
