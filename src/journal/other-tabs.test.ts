/**
 * The journal beside tabs without it: `journal: "opfs"` journals in one tab,
 * and the others write without it (docs/journal.md). At the journaling
 * saver's next open, recovery must not undo what they wrote, deleted or
 * re-encrypted meanwhile. Memory backend, so it runs the same in Node and
 * Chromium.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { frameRecord, parseJournal } from "./format.js";
import { joinBytes } from "../core/bytes.js";
import { MemoryJournalBackend, type RecoveryReport } from "./index.js";
import type { IndexedDBSaver } from "../saver/index.js";
import { deleteSaverDatabase } from "../saver/delete-database.js";
import {
  STORES,
  config,
  dbName,
  deleteDb,
  losing,
  lostSince,
  open,
  removeJournalTestData,
  saver,
  scan,
  tickGraph,
} from "../../test/support/journal-savers.js";

afterEach(removeJournalTestData);

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
    // Nothing was put back: no "restored" report (an app shows one), at this open or the next.
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reopened.close();
    const again: RecoveryReport[] = [];
    const third = saver(name, {}, again);
    await third.recovery();
    await third.close();
    expect(again[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
  });

  it("one open meanwhile, answering reads from memory, sees what the journaling saver's recovery put back", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 2).invoke({ count: 0 }, config("t"));
    const before = MemoryJournalBackend.file(name)!;
    await tickGraph(journaling, 5).invoke({ count: 0 }, config("t"));
    await journaling.close();
    const lagging = await lostSince(before, MemoryJournalBackend.file(name)!); // steps 3 to 5 lost by a crash
    const other = saver(lagging, { journal: "off" });
    await tickGraph(other, 1).invoke({ count: 0 }, config("x")); // it writes: it holds the write lease
    expect((await other.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    const reports: RecoveryReport[] = [];
    const reopened = saver(lagging, {}, reports);
    expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 5 });
    expect(reports[0]).toMatchObject({ kind: "restored" });
    // Before, the replay wrote without the lease: the other saver kept answering step 2 from memory (and a
    // run it continued there would have forked the thread from it).
    expect((await other.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 5 });
    await Promise.all([other.close(), reopened.close()]);
  });

  it("a thread it deleted leaves the journal at the journaling saver's next open: a later wipe does not bring it back", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("gone"));
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("kept"));
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.deleteThread("gone");
    await other.close();
    const reopened = saver(name);
    expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reopened.close();
    await deleteDb(name); // Chromium deleting a corrupted database
    // Before, the journal kept the deleted thread's rows (plaintext without encryption): the restore put it back.
    const restored = saver(name);
    expect(await restored.getTuple(config("gone"))).toBeUndefined();
    expect((await restored.getTuple(config("kept")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    await restored.close();
  });

  /** The ids of a thread's checkpoints, newest first. */
  const ids = async (reader: IndexedDBSaver, threadId: string) => {
    const found: string[] = [];
    for await (const tuple of reader.list(config(threadId))) found.push(tuple.checkpoint.id);
    return found;
  };

  it("checkpoints it pruned stay pruned at the journaling saver's next open, and after a later wipe", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 4).invoke({ count: 0 }, config("t"));
    await tickGraph(journaling, 2).invoke({ count: 0 }, config("kept"));
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.prune(["t"]);
    const left = await ids(other, "t");
    expect(left).toHaveLength(1);
    await other.close();
    const reopened = saver(name);
    expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect(await ids(reopened, "t")).toEqual(left);
    await reopened.close();
    await deleteDb(name); // Chromium deleting a corrupted database
    const restored = saver(name);
    expect(await ids(restored, "t")).toEqual(left);
    expect((await restored.getTuple(config("kept")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    await restored.close();
  });

  it("a run it deleted (deleteForRuns, the thread's newest) stays deleted at the journaling saver's next open, and after a later wipe", async () => {
    const name = dbName();
    const journaling = saver(name);
    const runConfig = (runId: string) => ({ ...config("t"), metadata: { run_id: runId } });
    await tickGraph(journaling, 2).invoke({ count: 0 }, runConfig("first"));
    const before = await ids(journaling, "t");
    await tickGraph(journaling, 4).invoke({ count: 0 }, runConfig("second"));
    expect((await ids(journaling, "t")).length).toBeGreaterThan(before.length);
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.deleteForRuns(["second"]);
    expect(await ids(other, "t")).toEqual(before);
    await other.close();
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, {}, reports);
    expect(await ids(reopened, "t")).toEqual(before);
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reopened.close();
    await deleteDb(name); // Chromium deleting a corrupted database
    const restored = saver(name);
    expect(await ids(restored, "t")).toEqual(before);
    await restored.close();
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

type Rows = { meta: unknown[] } & Record<string, unknown[]>;

/** Removes the database's snapshot mark, as a database an older release compacted has none. */
async function deleteMark(name: string): Promise<void> {
  const db = await open(name);
  const tx = db.transaction("meta", "readwrite");
  tx.objectStore("meta").delete("journal\u0000snapshot");
  await new Promise((resolve) => (tx.oncomplete = resolve));
  db.close();
}

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

  it("its own rekey() and the writes after it, lost by the database in a crash, come back from the journal", async () => {
    const name = dbName();
    const journaling = saver(name, { serde: await key() });
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    const beforeRekey = MemoryJournalBackend.file(name)!;
    await journaling.rekey();
    await tickGraph(journaling, 2).invoke({ count: 0 }, config("u"));
    await journaling.close();
    // The crash cost the database everything since the rekey began; the journal has it all.
    const lagging = await lostSince(beforeRekey, MemoryJournalBackend.file(name)!);
    // Before, the database's key record (the one before the rekey) read as another tab's key change: nothing
    // was replayed, the journal was rewritten from the database, and the thread written after the rekey was gone.
    const reports: RecoveryReport[] = [];
    const reopened = saver(lagging, { serde: await key() }, reports);
    expect((await reopened.getTuple(config("u")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    expect(reports[0]).toMatchObject({ kind: "restored" });
    expect(keyRecord((await scan(lagging)).meta!)).toEqual(keyRecord((await scan(name)).meta!));
    await reopened.close();
  });

  it("rekey() beside a journal an older release compacted (its snapshot unmarked): nothing of it is replayed", async () => {
    const name = dbName();
    const journaling = saver(name, { serde: await key() });
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    await journaling.compactJournal();
    await journaling.close();
    // As an older release compacted it: no mark, in the database or in the snapshot.
    const [header, snap] = parseJournal(MemoryJournalBackend.file(name)!).records as [object, { snap: Rows }];
    const meta = snap.snap.meta.filter((row) => (row as { name: string }).name !== "journal\u0000snapshot");
    MemoryJournalBackend.setFile(name, joinBytes([frameRecord(header), frameRecord({ snap: { ...snap.snap, meta } })]));
    await deleteMark(name);
    const other = saver(name, { journal: "off", serde: await key() });
    await other.rekey();
    await tickGraph(other, 2).invoke({ count: 0 }, config("b"));
    await other.close();
    const expected = await scan(name);
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, { serde: await key() }, reports);
    expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    expect((await reopened.getTuple(config("b")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    const now = await scan(name);
    for (const store of ["checkpoints", "blobs", "writes", "threads"] as const)
      expect({ [store]: now[store] }).toEqual({ [store]: expected[store] });
    await reopened.close();
  });

  it("a wiped database another tab opened first (a new key record) is still restored from the journal", async () => {
    const name = dbName();
    const journaling = saver(name, { serde: await key() });
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("a"));
    await journaling.close();
    await deleteDb(name); // Chromium deleting a corrupted database
    // The tab without the journal loads first: it reports the wipe and writes, under a data key of its own.
    const other = saver(name, { journal: "off", serde: await key() });
    await tickGraph(other, 1).invoke({ count: 0 }, config("b"));
    await other.close();
    // Before, its new key record read as a key change: the journal, the one copy of the wiped threads, was
    // replaced by a snapshot of the database and thread "a" was gone for good.
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, { serde: await key() }, reports);
    expect((await reopened.getTuple(config("a")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    expect(reports[0]).toMatchObject({ kind: "restored" });
    await reopened.close();
  });

  it("an encrypted database that lost its last transactions, its key unchanged, is still restored", async () => {
    const name = dbName();
    const first = saver(name, { serde: await key() });
    await tickGraph(first, 6).invoke({ count: 0 }, config("t"));
    await first.close();
    const lagging = await losing(MemoryJournalBackend.file(name)!, 3);
    const reports: RecoveryReport[] = [];
    const restored = saver(lagging, { serde: await key() }, reports);
    expect((await restored.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 6 });
    expect(reports[0]).toMatchObject({ kind: "restored", recoveredWrites: 3 });
    await restored.close();
  });
});

describe("while the journaling saver is open", () => {
  const key = () => EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(9));
  const keyRecord = (rows: unknown[]) => rows.find((row) => (row as { name: string }).name === "key");
  const lastKeyRecord = (file: Uint8Array) => {
    let found: unknown;
    for (const record of parseJournal(file).records as { snap?: { meta: unknown[] }; o?: unknown[][] }[]) {
      if (record.snap) found = keyRecord(record.snap.meta);
      for (const op of record.o ?? []) if (op[0] === "meta" && keyRecord([op[2]])) found = op[2];
    }
    return found;
  };

  it("a thread another tab deletes leaves its journal: a wipe later does not bring it back", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 2).invoke({ count: 0 }, config("kept"));
    await tickGraph(journaling, 2).invoke({ count: 0 }, config("gone"));
    const told = new Promise<void>((resolve) => journaling.subscribe((change) => change.remote && resolve()));
    const other = saver(name, { journal: "off" });
    await other.deleteThread("gone");
    await told;
    await Promise.all([other.close(), journaling.close()]);
    await deleteDb(name); // Chromium deleting a corrupted database
    // Before, the journal still held the thread's rows (plaintext without encryption), restored with the rest.
    const restored = saver(name);
    expect(await restored.getTuple(config("gone"))).toBeUndefined();
    expect((await restored.getTuple(config("kept")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    await restored.close();
  });

  it("the database another tab deletes (deleteSaverDatabase) is not restored from its journal at the next open", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    await deleteSaverDatabase(name);
    await journaling.close(); // the page reloads
    const reports: RecoveryReport[] = [];
    const reloaded = saver(name, {}, reports);
    // Before: restored from the journal, which the deleting tab cannot remove while this saver holds it.
    expect(await reloaded.getTuple(config("t"))).toBeUndefined();
    // Not "restored", nor "wiped": the database was deleted on purpose (deleted-elsewhere.browser.test.ts too).
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reloaded.close();
  });

  it("rekey() in another tab: the retired key's record and ciphertext leave its journal", async () => {
    const name = dbName();
    const journaling = saver(name, { serde: await key() });
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    const other = saver(name, { journal: "off", serde: await key() });
    await other.rekey();
    const current = keyRecord((await scan(name)).meta!);
    expect(lastKeyRecord(MemoryJournalBackend.file(name)!)).not.toEqual(current);
    // Before, they stayed in its OPFS files until its next open or its next delete.
    await vi.waitFor(() => expect(lastKeyRecord(MemoryJournalBackend.file(name)!)).toEqual(current), {
      timeout: 1000,
    });
    await Promise.all([other.close(), journaling.close()]);
  });
});

describe("a journal whose snapshot the database holds no mark of", () => {
  it("is replayed from it once, then restarts from the database: later writes of other tabs stay", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("a"));
    await journaling.compactJournal();
    await journaling.close();
    // As an older release compacted it: no mark, in the database or in the snapshot.
    const unmarked = (rows: unknown[]) =>
      rows.filter((row) => (row as { name: string }).name !== "journal\u0000snapshot");
    const [header, snap] = parseJournal(MemoryJournalBackend.file(name)!).records as [
      object,
      { snap: { meta: unknown[] } },
    ];
    const old = { snap: { ...snap.snap, meta: unmarked(snap.snap.meta) } };
    MemoryJournalBackend.setFile(name, joinBytes([frameRecord(header), frameRecord(old)]));
    await deleteMark(name);
    const first = saver(name);
    expect((await first.getTuple(config("a")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    await first.close();
    const other = saver(name, { journal: "off" });
    await tickGraph(other, 2).invoke({ count: 0 }, config("b"));
    await other.close();
    // Before, each open replayed the unmarked snapshot again, clearing every store first.
    const again: RecoveryReport[] = [];
    const reopened = saver(name, {}, again);
    expect((await reopened.getTuple(config("b")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    expect(again[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reopened.close();
  });
});
