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

describe("a restore from the crash journal and the pull cursor", () => {
  it("a thread another tab pulled without the journal comes back at the next round after a wipe", async () => {
    const { token } = newUser();
    const name = `sync-journal-cursor-${Date.now()}`;
    // One app's space on the server for both devices (it defaults to the database's name).
    const options = { url: served.url, token, app: "journal-cursor", minBackoffMs: 10, maxBackoffMs: 50 };
    const other = device(served.url, token, { dbName: `${name}-other`, client: options });
    // One device, two tabs on one database: the first holds the journal, the second runs without it
    // (what `journal: "opfs"` gives a tab while another holds the file).
    const factory = new IDBFactory();
    const tab = (journal: "memory" | "off") => {
      const saver = new IndexedDBSaver({ dbName: name, indexedDB: factory, journal });
      const sync = new SyncClient({ saver, ...options });
      return { saver, sync, factory };
    };
    const journaled = tab("memory");
    const plain = tab("off");
    try {
      await journaled.saver.getTuple({ configurable: { thread_id: "none" } }); // it takes the journal first
      await chat(other.saver, "t1", ["first"]);
      await other.sync.syncNow();
      await plain.sync.syncNow(); // t1's rows and the cursor past them: not journaled
      await chat(other.saver, "t2", ["second"]);
      await other.sync.syncNow();
      await journaled.sync.syncNow(); // t2's rows and a cursor past t1 too: journaled
      expect((await state(plain.saver, "t1")).messages).toEqual((await state(other.saver, "t1")).messages);
      await closeDevices(journaled, plain);

      await deleteDatabase(name, factory); // Chromium deleting the corrupted database
      const reports: RecoveryReport[] = [];
      const saver = new IndexedDBSaver({
        dbName: name,
        indexedDB: factory,
        journal: "memory",
        onRecovery: (report) => reports.push(report),
      });
      const sync = new SyncClient({ saver, ...options });
      try {
        expect((await state(saver, "t2")).messages).toEqual((await state(other.saver, "t2")).messages);
        expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
        // Before, the journal put back the cursor past t1 without t1's rows: no pull ever brought them again.
        await sync.syncNow();
        expect((await state(saver, "t1")).messages).toEqual((await state(other.saver, "t1")).messages);
        expect((await state(saver, "t2")).messages).toEqual((await state(other.saver, "t2")).messages);
      } finally {
        await closeDevices({ saver, sync, factory });
      }
    } finally {
      await closeDevices(other);
      MemoryJournalBackend.setFile(name, undefined);
    }
  });
});
