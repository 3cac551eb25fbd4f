/**
 * The OPFS journal in real Chromium: the worker appends and flushes, a
 * compaction swaps files, a wiped database comes back from OPFS, a second
 * holder of the journal is refused, a crafted record in the file is dropped
 * as corrupt. What the journal costs per write is measured by
 * `npm run bench -- journal` (bench/suites/journal.ts).
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { frameRecord, parseJournal } from "./format.js";
import { JOURNAL_DIRECTORY, OpfsJournalBackend } from "./opfs-backend.js";
import type { RecoveryReport } from "./index.js";
import { IndexedDBSaver, type IndexedDBSaverParams } from "../saver/index.js";
import { joinBytes } from "../core/bytes.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { withRaw, request } from "../../test/support/raw-idb.js";
import { hex, planted } from "../../test/support/crafted-journal.js";

/** The saver typed with its journal methods. */
type JournaledSaver = IndexedDBSaver & { recovery(): Promise<RecoveryReport> };
const journaled = (params: Record<string, unknown>) =>
  new IndexedDBSaver(params as IndexedDBSaverParams) as JournaledSaver;
const unique = () => `journal-opfs-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

function deleteDb(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
}

async function removeJournal(name: string): Promise<void> {
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(JOURNAL_DIRECTORY, { create: true });
  for (const suffix of [".a.journal", ".b.journal", ".active"])
    await dir.removeEntry(encodeURIComponent(name) + suffix).catch(() => undefined);
}

const State = Annotation.Root({ count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });
function tickGraph(saver: IndexedDBSaver, steps: number) {
  return new StateGraph(State)
    .addNode("tick", () => ({ count: 1 }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (state: typeof State.State) => (state.count < steps ? "tick" : END))
    .compile({ checkpointer: saver });
}
const config = (threadId: string): RunnableConfig => ({ configurable: { thread_id: threadId }, recursionLimit: 1000 });

describe("OPFS journal backend", () => {
  it("appends durably, replaces crash-safely, and is exclusive", async () => {
    const name = unique();
    const backend = new OpfsJournalBackend(name);
    expect((await backend.open()).length).toBe(0);
    const a = frameRecord({ h: 1 });
    const b = frameRecord({ o: [["blobs", 0, { x: new Uint8Array([9]) }]] });
    await backend.append(a);
    await backend.append(b);
    expect(parseJournal(await backend.open()).records).toHaveLength(2);

    // Another holder (another tab) cannot open the same journal.
    const other = new OpfsJournalBackend(name);
    await expect(other.open()).rejects.toThrow(/NoModificationAllowed|InvalidState|lock/i);
    await other.close();

    await backend.replace(joinBytes([frameRecord({ h: 2 }), frameRecord({ snap: {} })]));
    await backend.append(b);
    await backend.close();
    const reopened = new OpfsJournalBackend(name);
    const records = parseJournal(await reopened.open()).records;
    expect(records).toHaveLength(3);
    expect(records[0]).toEqual({ h: 2 });
    await reopened.close();
    await removeJournal(name);
  });
});

describe("saver with journal: opfs", () => {
  it("restores a wiped database from OPFS", async () => {
    const name = unique();
    const first = journaled({ dbName: name, journal: "opfs" });
    await tickGraph(first, 5).invoke({ count: 0 }, config("t"));
    const latest = await first.getTuple(config("t"));
    await first.close();
    await deleteDb(name);
    const reports: RecoveryReport[] = [];
    const second = journaled({ dbName: name, journal: "opfs", onRecovery: (r: RecoveryReport) => reports.push(r) });
    expect((await second.getTuple(config("t")))?.checkpoint.id).toBe(latest?.checkpoint.id);
    expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
    await second.close();
    await deleteDb(name);
    await removeJournal(name);
  });

  it("what a second saver (its journal unavailable) deletes, prunes and re-encrypts is not restored after a wipe", async () => {
    const name = unique();
    const serde = () => EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(3));
    const first = journaled({ dbName: name, journal: "opfs", serde: await serde() });
    await tickGraph(first, 3).invoke({ count: 0 }, config("kept"));
    await tickGraph(first, 3).invoke({ count: 0 }, config("gone"));
    await tickGraph(first, 4).invoke({ count: 0 }, config("pruned"));
    // Another tab: the OPFS files are the first saver's, so it writes without a journal.
    const other = journaled({ dbName: name, journal: "opfs", serde: await serde() });
    expect((await other.recovery()).kind).toBe("journal-unavailable");
    await other.deleteThread("gone");
    await other.prune(["pruned"]);
    const told = new Promise<void>((resolve) =>
      first.subscribe((change) => change.remote && change.threadId === "signal" && resolve()),
    );
    await other.rekey();
    await other.put(
      config("signal"),
      { ...emptyCheckpoint(), id: "1" },
      { source: "input", step: -1, parents: {} },
      {},
    );
    await told; // the last notice: the first saver has had every one before it (they arrive in order)
    await Promise.all([other.close(), first.close()]);
    await deleteDb(name);
    // Before, the journal still held both, and the retired key's rows: the wipe's restore brought them back.
    const reports: RecoveryReport[] = [];
    const second = journaled({
      dbName: name,
      journal: "opfs",
      serde: await serde(),
      onRecovery: (r: RecoveryReport) => reports.push(r),
    });
    expect(await second.getTuple(config("gone"))).toBeUndefined();
    expect((await second.getTuple(config("kept")))?.checkpoint.channel_values).toMatchObject({ count: 3 });
    const pruned: string[] = [];
    for await (const tuple of second.list(config("pruned"))) pruned.push(tuple.checkpoint.id);
    expect(pruned).toHaveLength(1);
    expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
    await second.close();
    await deleteDb(name);
    await removeJournal(name);
  });

  it("drops a crafted record in the OPFS file as corrupt, restoring the records before it", async () => {
    const name = unique();
    const first = journaled({ dbName: name, journal: "opfs" });
    await tickGraph(first, 5).invoke({ count: 0 }, config("t"));
    const latest = await first.getTuple(config("t"));
    await first.close();
    // Someone editing the profile's files: a record putting a Set (msgpackr's 0x73), then a good one.
    const file = new OpfsJournalBackend(name);
    const good = await file.open();
    const after = frameRecord({ o: [["meta", 0, { name: "after", value: 1 }]] });
    await file.replace(joinBytes([good, planted("d4 73 00 91 01"), after]));
    await file.close();
    await deleteDb(name);

    const reports: RecoveryReport[] = [];
    const second = journaled({ dbName: name, journal: "opfs", onRecovery: (r: RecoveryReport) => reports.push(r) });
    expect((await second.getTuple(config("t")))?.checkpoint.id).toBe(latest?.checkpoint.id);
    expect(reports[0]).toMatchObject({
      kind: "restored",
      fromEmpty: true,
      tornRecord: true,
      journalRecords: parseJournal(good).records.length - 1,
    });
    await second.close();
    const meta = await withRaw(name, (db) => request(db.transaction("meta").objectStore("meta").getAllKeys()));
    expect(meta).not.toContain("planted");
    expect(meta).not.toContain("after");
    // The file was cut after the last good record.
    const reopened = new OpfsJournalBackend(name);
    expect(hex(await reopened.open())).toBe(hex(good));
    await reopened.close();
    await deleteDb(name);
    await removeJournal(name);
  });
});
