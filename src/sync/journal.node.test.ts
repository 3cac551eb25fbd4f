/**
 * Sync on a saver with the crash journal: a round writes sync's own records
 * (cursor, per-thread fingerprints) in the saver's `meta` store, which the
 * journal records like any row.
 */
import { describe, expect, it } from "vitest";
import { IDBFactory } from "fake-indexeddb";
import { chat } from "../../test/support/chat-graph.js";
import { deleteDatabase } from "../../test/support/databases.js";
import { closeDevices, device, newUser, serverForFile, state } from "../../test/support/sync/harness.js";
import type { JournaledSaver } from "../../test/support/journal-savers.js";
import { parseJournal } from "../journal/format.js";
import { MemoryJournalBackend, type RecoveryReport } from "../journal/index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { SyncClient } from "./client.js";

const served = serverForFile();

describe("sync with the crash journal", () => {
  it("a round appends to the journal: it is not rewritten whole (a snapshot of the database) at every round", async () => {
    const { token } = newUser();
    const name = `sync-journal-${Date.now()}`;
    const saver = new IndexedDBSaver({ dbName: name, indexedDB: new IDBFactory(), journal: "memory" });
    const sync = new SyncClient({ saver, url: served.url, token, minBackoffMs: 10, maxBackoffMs: 50 });
    const kinds = () =>
      parseJournal(MemoryJournalBackend.file(name)!).records.map((r) => Object.keys(r as object).join());
    try {
      await chat(saver, "t1", ["hello"]);
      await sync.syncNow();
      await chat(saver, "t1", ["again"]);
      const before = kinds();
      expect((await sync.syncNow()).pushed).toBeGreaterThan(0);
      // Before, each round's cursor and fingerprints (meta puts) compacted the journal: [header, snapshot].
      const after = kinds();
      expect(after.slice(0, before.length)).toEqual(before);
      expect(after.length).toBeGreaterThan(before.length);
    } finally {
      sync.close();
      await saver.close();
      MemoryJournalBackend.setFile(name, undefined);
    }
  });
});

/**
 * One device's database, two tabs on it: the first holds the journal, the second runs without it (what
 * `journal: "opfs"` gives a tab while another holds the file); and another device. One app's space on the
 * server for both devices (it defaults to the database's name).
 */
function twoTabs(label: string) {
  const { token } = newUser();
  const name = `sync-journal-${label}-${Date.now()}`;
  const options = { url: served.url, token, app: `journal-${label}`, minBackoffMs: 10, maxBackoffMs: 50 };
  const factory = new IDBFactory();
  const tab = (journal: "memory" | "off", onRecovery?: (report: RecoveryReport) => void) => {
    const saver = new IndexedDBSaver({
      dbName: name,
      indexedDB: factory,
      journal,
      ...(onRecovery ? { onRecovery } : {}),
    });
    return { saver, sync: new SyncClient({ saver, ...options }), factory };
  };
  const other = device(served.url, token, { dbName: `${name}-other`, client: options });
  const journaled = tab("memory");
  const plain = tab("off");
  /**
   * Both tabs closed, the database deleted (Chromium deleting a corrupted one), then a journaling tab
   * restoring it: it reads `restoredIds` as the other device does, and after one round `pulledIds` too
   * (rows the journal lacked, which only a pull brings back).
   */
  const restoreThenPull = async (restoredIds: string[], pulledIds: string[]) => {
    await closeDevices(journaled, plain);
    await deleteDatabase(name, factory);
    const reports: RecoveryReport[] = [];
    const restored = tab("memory", (report) => reports.push(report));
    try {
      await expectSame(restored.saver, other.saver, ...restoredIds);
      expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
      await restored.sync.syncNow();
      await expectSame(restored.saver, other.saver, ...restoredIds, ...pulledIds);
    } finally {
      await closeDevices(restored);
    }
  };
  const done = async () => {
    await closeDevices(other);
    MemoryJournalBackend.setFile(name, undefined);
  };
  return { journaled, plain, other, restoreThenPull, done };
}

/** `threadIds` read the same on `saver` as on `other`. */
async function expectSame(saver: IndexedDBSaver, other: IndexedDBSaver, ...threadIds: string[]): Promise<void> {
  for (const threadId of threadIds) {
    expect((await state(saver, threadId)).messages, threadId).toEqual((await state(other, threadId)).messages);
  }
}

describe("a restore from the crash journal and the pull cursor", () => {
  it("a thread another tab pulled without the journal comes back at the next round after a wipe", async () => {
    const { journaled, plain, other, restoreThenPull, done } = twoTabs("cursor");
    try {
      await journaled.saver.getTuple({ configurable: { thread_id: "none" } }); // it takes the journal first
      await chat(other.saver, "t1", ["first"]);
      await other.sync.syncNow();
      await plain.sync.syncNow(); // t1's rows and the cursor past them: not journaled
      await chat(other.saver, "t2", ["second"]);
      await other.sync.syncNow();
      await journaled.sync.syncNow(); // t2's rows and a cursor past t1 too: journaled
      await expectSame(plain.saver, other.saver, "t1");
      // Before, the journal put back the cursor past t1 without t1's rows: no pull ever brought them again.
      await restoreThenPull(["t2"], ["t1"]);
    } finally {
      await done();
    }
  });
});

describe("a restore from the crash journal and the device's own pushes", () => {
  // The device id in a record of the journal, or in its snapshot (compacted after the round that made it).
  it.each(["record", "snapshot"])(
    "a thread another tab of this device ran and pushed without the journal comes back after a wipe (id in a %s)",
    async (where) => {
      const { journaled, plain, other, restoreThenPull, done } = twoTabs(`own-${where}`);
      try {
        // The journaling tab syncs first: the device id, which the server names as its pushes' origin, is journaled.
        await chat(journaled.saver, "t0", ["zero"]);
        await journaled.sync.syncNow();
        if (where === "snapshot") await (journaled.saver as JournaledSaver).compactJournal();
        // The other tab (no journal) runs t1 and pushes it: the server has it, from this device.
        await chat(plain.saver, "t1", ["first"]);
        await plain.sync.syncNow();
        await other.sync.syncNow();
        expect((await state(other.saver, "t1")).messages.length).toBeGreaterThan(0);
        // Before, t1 never came back: the restored device id kept the server leaving it out of every pull.
        await restoreThenPull(["t0"], ["t1"]);
      } finally {
        await done();
      }
    },
  );
});
