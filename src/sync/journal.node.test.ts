/**
 * Sync on a saver with the crash journal: a round writes sync's own records
 * (cursor, per-thread fingerprints) in the saver's `meta` store, which the
 * journal records like any row.
 */
import { describe, expect, it } from "vitest";
import { IDBFactory } from "fake-indexeddb";
import { chat } from "../../test/support/chat-graph.js";
import { newUser, serverForFile } from "../../test/support/sync/harness.js";
import { parseJournal } from "../journal/format.js";
import { MemoryJournalBackend } from "../journal/index.js";
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
