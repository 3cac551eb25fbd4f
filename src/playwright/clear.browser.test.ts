/**
 * Clearing a database from a test leaves the app healthy: in real Chromium,
 * the page API's `clear({ deleteDatabase })` also removes the wipe marker and
 * the OPFS journal, so the app's next saver reports nothing "wiped", does not
 * fail with `onWipe: "throw"`, and restores nothing from a journal. A plain
 * `indexedDB.deleteDatabase` is the control: it leaves the app "wiped".
 */
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { pageApi } from "./page.js";
import { deleteSaverDatabase } from "../saver/delete-database.js";
import { DatabaseBlockedError } from "../core/errors.js";
import { defaultMarker } from "../journal/wipe-marker.js";

const unique = () => `playwright-clear-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

/** Writes one checkpoint of thread "t" (which sets the wipe marker) and closes. */
async function writeOne(dbName: string, journal: "off" | "opfs" = "off"): Promise<void> {
  const saver = new IndexedDBSaver({ dbName, journal });
  await saver.put(
    { configurable: { thread_id: "t", checkpoint_ns: "" } },
    emptyCheckpoint(),
    {
      source: "input",
      step: -1,
      parents: {},
    },
    {},
  );
  // The marker is written after the commit, without being awaited by put: close() waits for it.
  await saver.close();
}

/** Waits until `done` holds, looking every 20 ms; the 10 s bound only stops a wait for what never comes. */
async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !(await done()); await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (Date.now() > deadline) throw new Error(`Not within 10 s: ${what}.`);
  }
}

function rawDelete(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
}

describe("clear with deleteDatabase", () => {
  it("removes the wipe marker: the app's next open is not reported wiped (a raw delete is)", async () => {
    const control = unique();
    await writeOne(control);
    await rawDelete(control);
    const stale = new IndexedDBSaver({ dbName: control });
    expect((await stale.recovery()).kind).toBe("wiped");
    await stale.close();
    await pageApi.clear({ dbName: control, deleteDatabase: true });

    const dbName = unique();
    await writeOne(dbName);
    const result = await pageApi.clear({ dbName, deleteDatabase: true });
    expect(result).toEqual({ threadIds: [], marker: true, journalFiles: 0 });
    const app = new IndexedDBSaver({ dbName, onWipe: "throw" });
    expect((await app.recovery()).kind).toBe("ok");
    expect(await app.getTuple({ configurable: { thread_id: "t" } })).toBeUndefined();
    await app.close();
    await pageApi.clear({ dbName, deleteDatabase: true });
  });

  it("succeeds on a database the app already deleted, and removes the marker it left", async () => {
    const dbName = unique();
    await writeOne(dbName);
    await rawDelete(dbName);
    const result = await pageApi.clear({ dbName, deleteDatabase: true });
    expect(result).toEqual({ threadIds: [], marker: true, journalFiles: 0 });
    const app = new IndexedDBSaver({ dbName, onWipe: "throw" });
    expect((await app.recovery()).kind).toBe("ok");
    await app.close();
    await pageApi.clear({ dbName, deleteDatabase: true });
  });

  it("blocked, says the delete stays queued; once it happens, the marker goes too: the app is not reported wiped", async () => {
    const dbName = unique();
    await writeOne(dbName);
    // A connection that does not close on versionchange (not IndexedDBSaver's): the delete waits for it.
    const held = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open(dbName);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const error = await deleteSaverDatabase(dbName, { blockedTimeoutMs: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseBlockedError);
    expect((error as Error).message).toMatch(/stays queued.*when that connection closes/);
    held.close();
    await until(async () => !(await indexedDB.databases()).some((db) => db.name === dbName), "the late delete");
    // The marker's removal follows the delete, in the background: waited for as it happens, not for a while.
    await until(async () => !(await defaultMarker(dbName).has()), "the marker removed after the late delete");
    const app = new IndexedDBSaver({ dbName, onWipe: "throw" });
    expect((await app.recovery()).kind).toBe("ok");
    await app.close();
    await pageApi.clear({ dbName, deleteDatabase: true });
  });

  it("removes the OPFS journal: nothing deleted comes back from it", async () => {
    const dbName = unique();
    await writeOne(dbName, "opfs");
    const result = await pageApi.clear({ dbName, deleteDatabase: true });
    expect(result.marker).toBe(true);
    expect(result.journalFiles).toBeGreaterThanOrEqual(2);
    const app = new IndexedDBSaver({ dbName, journal: "opfs", onWipe: "throw" });
    const report = await app.recovery();
    expect(report).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect(await app.getTuple({ configurable: { thread_id: "t" } })).toBeUndefined();
    await app.close();
    await pageApi.clear({ dbName, deleteDatabase: true });
  });
});
