/**
 * The crash journal (journal/): record framing, and the saver restoring a
 * wiped or lagging database from a journal (the memory backend, so it runs
 * the same in Node and Chromium; the OPFS backend has its own browser test).
 * Saver-level tests go through the saver's `journal` option.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import { afterEach, describe, expect, it } from "vitest";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { frameRecord, parseJournal } from "./format.js";
import { sameValue } from "../core/equality.js";
import {
  DatabaseWipedError,
  MemoryJournalBackend,
  resetMemoryJournals,
  type JournalOption,
  type RecoveryReport,
} from "./index.js";
import { replayFile } from "./raw.js";
import { IndexedDBSaver, type IndexedDBSaverParams } from "../saver/index.js";
import { joinBytes } from "../core/bytes.js";

/** The saver's journal options and methods (src/saver/types.ts, src/saver/index.ts). */
type JournalParams = IndexedDBSaverParams & {
  journal?: JournalOption;
  onRecovery?: (report: RecoveryReport) => void;
  onWipe?: "report" | "throw";
};
type JournaledSaver = IndexedDBSaver & { recovery(): Promise<RecoveryReport>; compactJournal(): Promise<void> };

const STORES = ["checkpoints", "blobs", "writes", "threads", "meta"] as const;
let counter = 0;
const names: string[] = [];
function dbName(): string {
  const name = `journal-test-${Date.now()}-${counter++}`;
  names.push(name);
  return name;
}

function open(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}
function deleteDb(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
}
async function scan(name: string): Promise<Record<string, unknown[]>> {
  const db = await open(name);
  try {
    const tx = db.transaction([...STORES], "readonly");
    const rows = await Promise.all(
      STORES.map(
        (store) =>
          new Promise<unknown[]>((resolve, reject) => {
            const request = tx.objectStore(store).getAll();
            request.onsuccess = () => resolve(request.result);
            request.onerror = () => reject(request.error);
          }),
      ),
    );
    return Object.fromEntries(STORES.map((store, i) => [store, rows[i]!]));
  } finally {
    db.close();
  }
}

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

/** A graph that ticks `steps` supersteps, logging each step once. */
function tickGraph(saver: IndexedDBSaver, steps: number) {
  return new StateGraph(State)
    .addNode("tick", (state: typeof State.State) => ({ count: 1, log: [`step-${state.count + 1}`] }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (state: typeof State.State) => (state.count < steps ? "tick" : END))
    .compile({ checkpointer: saver });
}

const config = (threadId: string): RunnableConfig => ({ configurable: { thread_id: threadId }, recursionLimit: 1000 });

function saver(name: string, params: JournalParams = {}, reports: RecoveryReport[] = []): JournaledSaver {
  const options: JournalParams = {
    dbName: name,
    journal: "memory",
    onRecovery: (report) => reports.push(report),
    ...params,
  };
  return new IndexedDBSaver(options) as JournaledSaver;
}

afterEach(async () => {
  for (const name of names.splice(0)) await deleteDb(name).catch(() => undefined);
  resetMemoryJournals();
});

describe("journal framing", () => {
  it("reads back framed records and stops at a torn or corrupt tail", () => {
    const records = [{ h: 1 }, { o: [["blobs", 0, { value: ["json", new Uint8Array([1, 2, 3])] }]] }, { o: [] }];
    const bytes = joinBytes(records.map((record) => frameRecord(record)));
    const whole = parseJournal(bytes);
    expect(whole.torn).toBe(false);
    expect(whole.records).toHaveLength(3);
    expect(sameValue(whole.records[1], records[1])).toBe(true);
    const value = (whole.records[1] as { o: [string, number, { value: [string, Uint8Array] }][] }).o[0]![2].value[1];
    expect(value.constructor).toBe(Uint8Array);

    const torn = parseJournal(bytes.subarray(0, bytes.length - 3));
    expect(torn.records).toHaveLength(2);
    expect(torn.torn).toBe(true);

    const flipped = bytes.slice();
    flipped[bytes.length - 2]! ^= 0xff;
    expect(parseJournal(flipped).records).toHaveLength(2);
  });
});

describe("saver with a journal", () => {
  it("restores a wiped database from the journal before the first read", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 6).invoke({ count: 0 }, config("t1"));
    await tickGraph(first, 3).invoke({ count: 0 }, config("t2"));
    const before = await scan(name);
    const latest = await first.getTuple(config("t1"));
    await first.close();

    await deleteDb(name); // Chromium deleting a corrupted database
    const reports: RecoveryReport[] = [];
    const second = saver(name, {}, reports);
    const restored = await second.getTuple(config("t1"));
    expect(restored?.checkpoint.id).toBe(latest?.checkpoint.id);
    expect(restored?.checkpoint.channel_values).toEqual(latest?.checkpoint.channel_values);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
    expect(reports[0]!.recoveredWrites).toBeGreaterThan(10);
    expect(sameValue(await scan(name), before)).toBe(true);
    const threads: string[] = [];
    for await (const thread of second.listThreads()) threads.push(thread.threadId);
    expect(threads.sort()).toEqual(["t1", "t2"]);
    await second.close();
  });

  it("re-applies the last transactions a database lost, and nothing else changes", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 8).invoke({ count: 0 }, config("t"));
    await first.close();
    const full = MemoryJournalBackend.file(name)!;
    const expected = await scan(name);

    // A database that lost its last 3 transactions: the journal's prefix, replayed.
    const records = parseJournal(full).records;
    const lagging = dbName();
    const seed = saver(lagging, { journal: "off" });
    await seed.recovery();
    await seed.close();
    const db = await open(lagging);
    await replayFile(db, joinBytes(records.slice(0, records.length - 3).map((record) => frameRecord(record))));
    db.close();
    expect(sameValue(await scan(lagging), expected)).toBe(false);

    // The full journal, as the lagging database's own (its header names the database).
    const own = [{ ...(records[0] as object), db: lagging }, ...records.slice(1)];
    MemoryJournalBackend.setFile(lagging, joinBytes(own.map((record) => frameRecord(record))));
    const reports: RecoveryReport[] = [];
    const second = saver(lagging, {}, reports);
    expect((await second.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 8 });
    expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: false, recoveredWrites: 3 });
    expect(sameValue(await scan(lagging), expected)).toBe(true);
    await second.close();

    // Up to date: a reopen re-applies nothing new and reports ok.
    const again: RecoveryReport[] = [];
    const third = saver(lagging, {}, again);
    await third.recovery();
    expect(again[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect(sameValue(await scan(lagging), expected)).toBe(true);
    await third.close();
  });

  it("journals again what committed but whose append a crash cut off", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 6).invoke({ count: 0 }, config("t"));
    const latest = await first.getTuple(config("t"));
    await first.close();
    // The last two appends never reached the file; the database has them.
    const records = parseJournal(MemoryJournalBackend.file(name)!).records;
    MemoryJournalBackend.setFile(name, joinBytes(records.slice(0, -2).map((record) => frameRecord(record))));
    const second = saver(name);
    await second.recovery();
    await second.close();
    await deleteDb(name); // and then the database is wiped
    const third = saver(name);
    const restored = await third.getTuple(config("t"));
    expect(restored?.checkpoint.id).toBe(latest?.checkpoint.id);
    expect(restored?.checkpoint.channel_values).toEqual(latest?.checkpoint.channel_values);
    const ids: string[] = [];
    for await (const tuple of third.list(config("t")))
      ids.push(tuple.parentConfig?.configurable?.checkpoint_id ?? "", tuple.checkpoint.id);
    // Linked history: each checkpoint's parent is the next one listed.
    for (let i = 2; i < ids.length; i += 2) expect(ids[i - 2]).toBe(ids[i + 1]);
    await third.close();
  });

  it("skips a torn last record and resumes the run with every step once", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 5).invoke({ count: 0 }, config("t"));
    await first.close();
    const full = MemoryJournalBackend.file(name)!;
    MemoryJournalBackend.setFile(name, full.subarray(0, full.length - 5));
    await deleteDb(name);

    const reports: RecoveryReport[] = [];
    const second = saver(name, {}, reports);
    const tuple = await second.getTuple(config("t"));
    expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true, tornRecord: true });
    expect(tuple).toBeDefined();
    // Resume: a new input on the same thread continues from the restored state.
    const state = (await tickGraph(second, 7).invoke(null, config("t"))) as typeof State.State;
    expect(state.log).toEqual(Array.from({ length: state.count }, (_, i) => `step-${i + 1}`));
    await second.close();
  });

  it("compacts the journal as it grows: pruned checkpoints leave it", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 10).invoke({ count: 0 }, config("t"));
    await first.prune(["t"]);
    await first.compactJournal();
    const compacted = parseJournal(MemoryJournalBackend.file(name)!).records;
    expect(compacted).toHaveLength(2); // header + snapshot
    const expected = await scan(name);
    expect(expected.checkpoints).toHaveLength(1);
    await first.close();

    await deleteDb(name);
    const second = saver(name);
    expect((await second.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 10 });
    expect(sameValue(await scan(name), expected)).toBe(true);
    await second.close();
  });

  it("journals deletes: a deleted thread stays deleted after a restore", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 3).invoke({ count: 0 }, config("gone"));
    await tickGraph(first, 3).invoke({ count: 0 }, config("kept"));
    await first.deleteThread("gone");
    await first.copyThread("kept", "copy");
    const expected = await scan(name);
    await first.close();
    await deleteDb(name);
    const second = saver(name);
    expect(await second.getTuple(config("gone"))).toBeUndefined();
    expect((await second.getTuple(config("copy")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    expect(sameValue(await scan(name), expected)).toBe(true);
    await second.close();
  });

  it("restores an encrypted database: the key record is journaled too", async () => {
    const name = dbName();
    const serde = () =>
      EncryptedSerializer.fromPassphrase("correct horse", {
        salt: "journal-test-salt",
        iterations: 1000,
        insecureTestOnlyWeakKdf: true,
      });
    const first = saver(name, { serde: await serde() });
    await tickGraph(first, 3).invoke({ count: 0 }, config("t"));
    await first.close();
    await deleteDb(name);
    const second = saver(name, { serde: await serde() });
    expect((await second.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    await second.close();
  });

  it("without a journal, reports a wipe instead of starting from empty silently", async () => {
    const name = dbName();
    const first = saver(name, { journal: "off" });
    await tickGraph(first, 2).invoke({ count: 0 }, config("t"));
    expect((await first.recovery()).kind).toBe("ok");
    await first.close();
    await new Promise((resolve) => setTimeout(resolve, 50)); // the marker is written in the background
    await deleteDb(name);

    const reports: RecoveryReport[] = [];
    const second = saver(name, { journal: "off" }, reports);
    expect(await second.getTuple(config("t"))).toBeUndefined();
    expect(reports[0]).toMatchObject({ kind: "wiped", fromEmpty: true });
    await second.close();

    await deleteDb(name);
    const strict = saver(name, { journal: "off", onWipe: "throw" });
    await expect(strict.getTuple(config("t"))).rejects.toBeInstanceOf(DatabaseWipedError);
    await strict.close();
  });

  it("a new database is not a wipe", async () => {
    const reports: RecoveryReport[] = [];
    const fresh = saver(dbName(), { journal: "off" }, reports);
    await fresh.recovery();
    expect(reports[0]).toMatchObject({ kind: "ok", fromEmpty: false });
    await fresh.close();
  });
});

describe("a saver beside the journaling one, without the journal", () => {
  // journal: "opfs" journals in one tab; the others write without it (docs/journal.md). Before, the journaling
  // saver's next open replayed its last records over what they wrote since: a snapshot among them cleared
  // every store first (their threads were lost), a deleted thread came back, an older summary replaced theirs.
  const threadIds = async (reader: IndexedDBSaver) => {
    const ids: string[] = [];
    for await (const thread of reader.listThreads()) ids.push(thread.threadId);
    return ids.sort();
  };

  it("its threads written after the journal's last compaction stay at the journaling saver's next open", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("a"));
    await journaling.compactJournal();
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await tickGraph(other, 2).invoke({ count: 0 }, config("b"));
    await other.close();
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, {}, reports);
    expect((await reopened.getTuple(config("b")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    expect((await reopened.getTuple(config("a")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reopened.close();
  });

  it("a thread it deleted stays deleted", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("kept"));
    // Last: the journal's newest records are the deleted thread's, which the database no longer holds.
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("gone"));
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.deleteThread("gone");
    await other.close();
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, {}, reports);
    expect(await reopened.getTuple(config("gone"))).toBeUndefined();
    expect(await threadIds(reopened)).toEqual(["kept"]);
    expect((await reopened.getTuple(config("kept")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    await reopened.close();
  });

  it("a thread it continued keeps the summary it wrote, and the open reports nothing restored", async () => {
    const name = dbName();
    const meta = { source: "loop", step: 0, parents: {} } as CheckpointMetadata;
    const journaling = saver(name);
    const first = await journaling.put(config("shared"), { ...emptyCheckpoint(), id: "1" }, meta, {});
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.put(first, { ...emptyCheckpoint(), id: "2" }, meta, {});
    await other.close();
    const reopened = saver(name);
    // Nothing of the journal's was lost: no "restored" report (an app shows one), no summary put back.
    expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect((await scan(name)).threads).toMatchObject([{ thread_id: "shared", latest: { checkpoint_id: "2" } }]);
    await reopened.close();
  });

  it("a thread used again after that delete, whose rows the database lost, comes back from the journal", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 3).invoke({ count: 0 }, config("t"));
    await first.close();
    const other = saver(name, { journal: "off" });
    await other.deleteThread("t");
    await other.close();
    const journaling = saver(name);
    await tickGraph(journaling, 2).invoke({ count: 0 }, config("t"));
    const again = await scan(name);
    await journaling.close();
    // The database loses the run after the delete (a crash), as raw deletes of its rows.
    const db = await open(name);
    const tx = db.transaction(["checkpoints", "blobs", "writes", "threads"], "readwrite");
    for (const store of ["checkpoints", "blobs", "threads"]) tx.objectStore(store).clear();
    tx.objectStore("writes").delete(IDBKeyRange.bound(["t", ""], ["t", "", []])); // not the tombstone's copy
    await new Promise((resolve) => (tx.oncomplete = resolve));
    db.close();
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, {}, reports);
    expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    expect(reports[0]).toMatchObject({ kind: "restored" });
    const now = await scan(name);
    for (const store of STORES) expect({ [store]: now[store] }).toEqual({ [store]: again[store] });
    await reopened.close();
  });
});

describe("a key change in a tab without the journal", () => {
  const key = () => EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(9));
  const keyRecord = (rows: unknown[]) => rows.find((row) => (row as { name: string }).name === "key");

  it("rekey(): the journaling saver's next open replays none of its retired key's rows, and rewrites the journal", async () => {
    const name = dbName();
    const journaling = saver(name, { serde: await key() });
    await tickGraph(journaling, 4).invoke({ count: 0 }, config("t"));
    await journaling.close();
    const other = saver(name, { journal: "off", serde: await key() });
    await other.rekey();
    await other.close();
    // Before: the journal's rows, sealed under the retired data key, went back over the re-encrypted ones
    // (DecryptionError on every read of the thread).
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, { serde: await key() }, reports);
    expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 4 });
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    let checkpoints = 0;
    for await (const tuple of reopened.list(config("t"))) checkpoints += tuple.checkpoint.id ? 1 : 0;
    expect(checkpoints).toBe(6);
    // The journal is now the database's snapshot: its key record is the database's.
    const records = parseJournal(MemoryJournalBackend.file(name)!).records as { snap?: { meta: unknown[] } }[];
    expect(records.map((record) => Object.keys(record).join())).toEqual(["h,db", "snap"]);
    expect(keyRecord(records[1]!.snap!.meta)).toEqual(keyRecord((await scan(name)).meta!));
    await reopened.close();
  });

  it("an encrypted database that lost its last transactions, its key unchanged, is still restored", async () => {
    const name = dbName();
    const first = saver(name, { serde: await key() });
    await tickGraph(first, 6).invoke({ count: 0 }, config("t"));
    await first.close();
    const records = parseJournal(MemoryJournalBackend.file(name)!).records;
    const lagging = dbName();
    const seed = saver(lagging, { journal: "off" });
    await seed.recovery();
    await seed.close();
    const db = await open(lagging);
    await replayFile(db, joinBytes(records.slice(0, records.length - 3).map((record) => frameRecord(record))));
    db.close();
    const own = [{ ...(records[0] as object), db: lagging }, ...records.slice(1)];
    MemoryJournalBackend.setFile(lagging, joinBytes(own.map((record) => frameRecord(record))));
    const reports: RecoveryReport[] = [];
    const restored = saver(lagging, { serde: await key() }, reports);
    expect((await restored.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 6 });
    expect(reports[0]).toMatchObject({ kind: "restored", recoveredWrites: 3 });
    await restored.close();
  });
});
