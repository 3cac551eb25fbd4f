/**
 * The journal beside tabs without it, continued (src/journal/other-tabs.test.ts):
 * what those tabs remove or replace while the journaling tab is closed
 * (an import that replaces a thread, copies, the store, key changes) stays
 * as they left it at the journaling saver's next open, and after a later
 * wipe. Memory backend, so it runs the same in Node and Chromium.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it, vi } from "vitest";
import { importThread } from "../portable/index.js";
import type { IndexedDBSaver } from "../saver/index.js";
import type { RecoveryReport } from "./index.js";
import { deleteSaverDatabase } from "../saver/delete-database.js";
import {
  config,
  dbName,
  deleteDb,
  open,
  removeJournalTestData,
  saver,
  scan,
  tickGraph,
} from "../../test/support/journal-savers.js";

afterEach(removeJournalTestData);

/** The ids of a thread's checkpoints, newest first. */
async function ids(reader: IndexedDBSaver, threadId: string): Promise<string[]> {
  const found: string[] = [];
  for await (const tuple of reader.list(config(threadId))) found.push(tuple.checkpoint.id);
  return found;
}

describe('importThread with ifExists: "replace" in a tab without the journal', () => {
  it("the replaced thread's checkpoints stay gone at the journaling saver's next open, and after a later wipe", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    await tickGraph(journaling, 5).invoke({ count: 0 }, config("source"));
    const file = await journaling.exportThread("source", { as: "bytes" });
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await importThread(other, file, { targetThreadId: "t", ifExists: "replace" });
    const imported = await ids(other, "t");
    await other.close();
    const expected = await scan(name);
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, {}, reports);
    expect(await ids(reopened, "t")).toEqual(imported);
    expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 5 });
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    const now = await scan(name);
    for (const store of ["checkpoints", "blobs", "writes", "threads"] as const)
      expect({ [store]: now[store] }).toEqual({ [store]: expected[store] });
    await reopened.close();
    await deleteDb(name); // Chromium deleting a corrupted database
    const restored = saver(name);
    expect(await ids(restored, "t")).toEqual(imported);
    await restored.close();
  });
  it("an older export of the same thread: its later checkpoints, the journal's last records, are not restored", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 2).invoke({ count: 0 }, config("t"));
    const file = await journaling.exportThread("t", { as: "bytes" });
    await tickGraph(journaling, 6).invoke({ count: 0 }, config("t"));
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await importThread(other, file, { ifExists: "replace" });
    const imported = await ids(other, "t");
    await other.close();
    const expected = await scan(name);
    const reports: RecoveryReport[] = [];
    const reopened = saver(name, {}, reports);
    // Before: the replaced checkpoints, read as lost by a crash, were replayed: the thread was at step 6 again.
    expect(await ids(reopened, "t")).toEqual(imported);
    expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    // Nothing was lost, and the rows stay as the import wrote them. Before, the journal's copies of the checkpoints
    // the file holds again (and the thread summary of the older run) were replayed over the imported rows, and the
    // open reported "restored", with as many recovered writes.
    expect(reports[0]).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    const now = await scan(name);
    for (const store of ["checkpoints", "blobs", "writes", "threads"] as const)
      expect({ [store]: now[store] }).toEqual({ [store]: expected[store] });
    await reopened.close();
    await deleteDb(name); // Chromium deleting a corrupted database
    const restored = saver(name);
    expect(await ids(restored, "t")).toEqual(imported);
    await restored.close();
  });
});

describe("a thread another tab wrote while the journaling tab was closed", () => {
  /** The journaling saver's next open (nothing to restore), a wipe (Chromium deleting a corrupted database), and the saver restoring from the journal. */
  const reopenThenWipe = async (name: string) => {
    const reopened = saver(name);
    expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reopened.close();
    await deleteDb(name);
    return saver(name);
  };

  it("copyThread: the copy is in the journal after the journaling saver's next open, and a later wipe restores it", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("a"));
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.copyThread("a", "b");
    const copied = await ids(other, "b");
    expect(copied).toEqual(await ids(other, "a"));
    await other.close();
    // Before, the journal knew only what the journaling saver wrote: thread "b" was gone.
    const restored = await reopenThenWipe(name);
    expect(await ids(restored, "b")).toEqual(copied);
    expect((await restored.getTuple(config("b")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    expect((await restored.getTuple(config("a")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    await restored.close();
  });

  it("rows that change no thread summary (a subgraph's checkpoint, pending writes alone) are in the journal after its next open", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    const head = (await journaling.getTuple(config("t")))!.config;
    // Thread "t" out of the journal's last records: the resync after a recovery re-reads their newest rows.
    await tickGraph(journaling, 24).invoke({ count: 0 }, config("u"));
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.putWrites(head, [["count", 7]], "task-other");
    const child = { configurable: { thread_id: "t", checkpoint_ns: "child:1" } };
    const meta = { source: "loop", step: 0, parents: {} } as CheckpointMetadata;
    await other.put(child, { ...emptyCheckpoint(), id: "child-1" }, meta, {});
    await other.close();
    const summaries = (await scan(name)).threads;
    const reopened = saver(name);
    expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    await reopened.close();
    expect((await scan(name)).threads).toEqual(summaries); // neither write changed a summary
    await deleteDb(name); // Chromium deleting a corrupted database
    // Before, the journal was left as it was: the restore lacked the pending write and the subgraph's checkpoint.
    const restored = saver(name);
    const tuple = await restored.getTuple(head);
    expect(tuple?.pendingWrites).toContainEqual(["task-other", "count", 7]);
    expect((await restored.getTuple(child))?.checkpoint.id).toBe("child-1");
    await restored.close();
  });

  it("a special pending write it overwrote in place (same key, same row count) is in the journal after its next open", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    const head = (await journaling.getTuple(config("t")))!.config;
    // A special channel (negative idx) is stored with a put, so a later write of it replaces the row.
    await journaling.putWrites(head, [["__error__", "first"]], "task-1");
    await tickGraph(journaling, 24).invoke({ count: 0 }, config("u")); // "t" out of the resync's reach
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.putWrites(head, [["__error__", "second"]], "task-1");
    await other.close();
    // Before, the wipe check counted rows: the journal kept "first", and the restore put it back over "second".
    const restored = await reopenThenWipe(name);
    const pending = (await restored.getTuple(head))?.pendingWrites;
    expect(pending).toContainEqual(["task-1", "__error__", "second"]);
    expect(pending).not.toContainEqual(["task-1", "__error__", "first"]);
    await restored.close();
  });
});

describe("deleteSaverDatabase", () => {
  it("the next saver on that name starts as on a new database, where the wipe marker is kept in memory too", async () => {
    const name = dbName();
    const first = saver(name, { journal: "off" });
    await tickGraph(first, 2).invoke({ count: 0 }, config("t"));
    await first.close();
    await deleteSaverDatabase(name);
    // Before, in Node (no OPFS, no localStorage: the marker lives in memory), "wiped" with fromEmpty.
    const reports: RecoveryReport[] = [];
    const next = saver(name, { journal: "off", onWipe: "throw" }, reports);
    expect(await next.getTuple(config("t"))).toBeUndefined();
    expect(reports[0]).toMatchObject({ kind: "ok", fromEmpty: false });
    await next.close();
  });

  it("a memory journal goes with the database: the next saver on that name restores nothing", async () => {
    const name = dbName();
    const first = saver(name);
    await tickGraph(first, 3).invoke({ count: 0 }, config("t"));
    await first.close();
    await deleteSaverDatabase(name);
    // Before, the memory journal outlived the delete: the next saver restored thread "t" from it ("restored").
    const reports: RecoveryReport[] = [];
    const next = saver(name, {}, reports);
    expect(await next.getTuple(config("t"))).toBeUndefined();
    expect(reports[0]).toMatchObject({ kind: "ok", fromEmpty: false, recoveredWrites: 0, journalRecords: 0 });
    await next.close();
  });
});

describe("removed marks (prune, deleteForRuns, an import's replace)", () => {
  type MetaRow = { name: string; value: unknown };
  const marks = async (name: string) =>
    ((await scan(name)).meta as MetaRow[]).filter((row) => row.name.startsWith("removed\u0000"));
  /** Thread "t" pruned by a tab without the journal while the journaling one was closed; its checkpoints left. */
  const prunedElsewhere = async (name: string) => {
    const journaling = saver(name);
    await tickGraph(journaling, 4).invoke({ count: 0 }, config("t"));
    await journaling.close();
    const other = saver(name, { journal: "off" });
    await other.prune(["t"]);
    const left = await ids(other, "t");
    await other.close();
    expect(left).toHaveLength(1);
    expect((await marks(name)).length).toBeGreaterThan(0);
    return left;
  };

  /** A thread's checkpoint ids after a wipe (Chromium deleting a corrupted database) and the restore from the journal. */
  const idsAfterWipe = async (name: string, threadId: string) => {
    await deleteDb(name);
    const restored = saver(name);
    const found = await ids(restored, threadId);
    await restored.close();
    return found;
  };

  it("are lifted once the journal holds none of their checkpoints: a wipe after the lift brings none back", async () => {
    const name = dbName();
    const left = await prunedElsewhere(name);
    const reopened = saver(name);
    expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    // Before, every mark stayed for good: the journal was rewritten without those checkpoints, nothing needed them.
    expect(await marks(name)).toEqual([]);
    expect(await ids(reopened, "t")).toEqual(left);
    await reopened.close();
    const again = saver(name); // an open after the lift: nothing to replay, nothing comes back
    expect(await again.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect(await ids(again, "t")).toEqual(left);
    await again.close();
    expect(await idsAfterWipe(name, "t")).toEqual(left);
  });

  it("the journaling saver's own prune: lifted at its next open, and a wipe brings nothing back", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 4).invoke({ count: 0 }, config("t"));
    await journaling.prune(["t"]);
    const left = await ids(journaling, "t");
    expect((await marks(name)).length).toBeGreaterThan(0);
    await journaling.close();
    const reopened = saver(name);
    expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect(await marks(name)).toEqual([]);
    await reopened.close();
    expect(await idsAfterWipe(name, "t")).toEqual(left);
  });

  it("stay in a database that syncs: sync pushes them and refuses their checkpoints from a server", async () => {
    const name = dbName();
    await prunedElsewhere(name);
    const db = await open(name);
    const tx = db.transaction("meta", "readwrite");
    tx.objectStore("meta").put({ name: "sync\u0000https://example.test\u0000cursor", value: 5 });
    await new Promise((resolve) => (tx.oncomplete = resolve));
    db.close();
    const before = await marks(name);
    const reopened = saver(name);
    await reopened.recovery();
    await reopened.close();
    expect(await marks(name)).toEqual(before);
  });

  it("none to lift, nothing changed: the open makes no read-write transaction (it would hold up other tabs' writes)", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    await journaling.close();
    const transaction = vi.spyOn(IDBDatabase.prototype, "transaction");
    try {
      const reopened = saver(name);
      expect(await reopened.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
      const modes = transaction.mock.calls.map(([stores, mode]) => ({ stores, mode: mode ?? "readonly" }));
      expect(modes.length).toBeGreaterThan(0); // the spy sees the recovery's reads
      // Before, lifting removed marks opened one on meta at every journaled open, with none to lift.
      expect(modes.filter(({ mode }) => mode !== "readonly")).toEqual([]);
      await reopened.close();
    } finally {
      transaction.mockRestore();
    }
  });

  it("stay while the journal still holds their checkpoints", async () => {
    const name = dbName();
    const journaling = saver(name);
    await tickGraph(journaling, 3).invoke({ count: 0 }, config("t"));
    const held = await ids(journaling, "t");
    await journaling.close();
    // A mark older than the journal naming a checkpoint its records hold (written outside the saver).
    const mark = { name: `removed\u0000t\u0000\u0000${held[1]}`, value: { removed_at: 1 } };
    const db = await open(name);
    const tx = db.transaction("meta", "readwrite");
    tx.objectStore("meta").put(mark);
    await new Promise((resolve) => (tx.oncomplete = resolve));
    db.close();
    const reopened = saver(name);
    await reopened.recovery();
    await reopened.close();
    expect(await marks(name)).toEqual([mark]);
  });
});
