/**
 * The crash journal (journal/): record framing, and the saver restoring a
 * wiped or lagging database from a journal (the memory backend, so it runs
 * the same in Node and Chromium; the OPFS backend has its own browser test).
 * Saver-level tests go through the saver's `journal` option.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { describe, expect, it, afterEach, vi } from "vitest";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { frameRecord, parseJournal } from "./format.js";
import { sameValue } from "../core/equality.js";
import { DatabaseWipedError, MemoryJournalBackend, type RecoveryReport } from "./index.js";
import { joinBytes } from "../core/bytes.js";
import {
  config,
  dbName,
  deleteDb,
  losing,
  lostSince,
  removeJournalTestData,
  saver,
  scan,
  tickGraph,
} from "../../test/support/journal-savers.js";
import type { State } from "../../test/support/journal-savers.js";

afterEach(removeJournalTestData);

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

    const lagging = await losing(full, 3);
    expect(sameValue(await scan(lagging), expected)).toBe(false);
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
    // All of it, but for the prune's removed marks: lifted at this open, as the journal holds none of their checkpoints.
    const isMark = (row: unknown) => (row as { name: string }).name.startsWith("removed\u0000");
    expect(expected.meta!.some(isMark)).toBe(true);
    expect(sameValue(await scan(name), { ...expected, meta: expected.meta!.filter((row) => !isMark(row)) })).toBe(true);
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

  it("two compactions within one millisecond: a database that lost the second is still behind its snapshot", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 2).invoke({ count: 0 }, config("a"));
    await tickGraph(first, 2).invoke({ count: 0 }, config("b"));
    // Each delete compacts the journal; a clock that does not move (or moves back) between the two compactions.
    const now = vi.spyOn(Date, "now").mockReturnValue(Date.now());
    try {
      await first.deleteThread("a");
      const one = MemoryJournalBackend.file(name)!;
      await first.deleteThread("b");
      await first.close();
      // The crash cost the database the second delete and its compaction's mark.
      const lagging = await lostSince(one, MemoryJournalBackend.file(name)!);
      // Before, both snapshots had the same generation: the database held the first one's mark, read as the
      // second's, so that snapshot was not replayed and the deleted thread stayed.
      const reports: RecoveryReport[] = [];
      const second = saver(lagging, {}, reports);
      expect(await second.getTuple(config("b"))).toBeUndefined();
      expect(reports[0]).toMatchObject({ kind: "restored" });
      await second.close();
    } finally {
      now.mockRestore();
    }
  });

  it("a thread put back after clearTombstone(), lost by the database with the clear, comes back from the journal", async () => {
    const name = dbName();
    const meta = { source: "loop", step: 0, parents: {} } as CheckpointMetadata;
    const first = saver(name);
    await first.put(config("t"), { ...emptyCheckpoint(), id: "1" }, meta, {});
    await first.deleteThread("t");
    const deleted = MemoryJournalBackend.file(name)!;
    // As importThread does: the thread's tombstone cleared, its old checkpoint put back.
    await first.clearTombstone("t");
    await first.put(config("t"), { ...emptyCheckpoint(), id: "1" }, meta, {});
    const expected = await scan(name);
    await first.close();
    // The crash cost the database the clear and the put: it still holds the tombstone, the journal has both.
    const lagging = await lostSince(deleted, MemoryJournalBackend.file(name)!);
    // Before, the database's stale tombstone filtered the put out of the replay: the thread was gone.
    const reports: RecoveryReport[] = [];
    const second = saver(lagging, {}, reports);
    expect((await second.getTuple(config("t")))?.checkpoint.id).toBe("1");
    expect(reports[0]).toMatchObject({ kind: "restored" });
    const now = await scan(lagging);
    for (const store of ["checkpoints", "blobs", "writes", "threads"] as const)
      expect({ [store]: now[store] }).toEqual({ [store]: expected[store] });
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
    // The marker is written in the background after the first commit; close() waits for that write.
    await first.close();
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
