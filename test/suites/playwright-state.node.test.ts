/**
 * Storage states and encrypted apps, in real Chromium: a thread seeded from
 * an export survives `context.storageState({ indexedDB: true })` into a new
 * context byte for byte; `toStorageState` builds the same database in Node
 * without a browser; both open without a "wiped" report. An app that
 * encrypts is seeded and read with its settings, and refuses a read without
 * them in words.
 */
import { createServer, type Server } from "node:http";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  exportThreadFromPage,
  openTab,
  readSyncStatus,
  readThreadState,
  seedThread,
  setOffline,
  toStorageState,
  trackSyncStatus,
  waitForSyncStatus,
  waitForThreadIdle,
  type AppEncryption,
} from "../../src/playwright.js";
import { callPage } from "../../src/playwright/inject.js";
import { restoreThreads } from "../../src/playwright/threads.js";
import { exportThread } from "../../src/portable/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { chromiumArgs, chromiumPath } from "../support/chromium.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { Scenario } from "../support/portable-scenario.js";

let server: Server;
let origin: string;
let browser: Browser;
let file: Uint8Array;

beforeAll(async () => {
  server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end("<!doctype html><title>app under test</title>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
  // A thread with a delta channel, a subgraph namespace and pending writes: every store has rows.
  const local = new IndexedDBSaver({ dbName: freshDbName("playwright-state") });
  await new Scenario().untilInterrupted(local, "t");
  file = await exportThread(local, "t", { as: "bytes" });
  await local.close();
  await deleteDatabase(local.dbName);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/**
 * Every store of the page's database, schema and rows, as JSON: typed
 * arrays as their kind and hex bytes, so that equal dumps mean equal bytes.
 */
function dump(page: Page, dbName: string): Promise<unknown> {
  return page.evaluate(async (name) => {
    const wait = <T>(request: IDBRequest<T>) =>
      new Promise<T>((resolve, reject) => {
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
    const plain = (value: unknown): unknown => {
      if (ArrayBuffer.isView(value)) {
        const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
        return { [value.constructor.name]: [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("") };
      }
      if (Array.isArray(value)) return value.map(plain);
      if (value && typeof value === "object")
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
      return value === undefined ? { undefined: true } : value;
    };
    const db = await wait(indexedDB.open(name));
    const tx = db.transaction([...db.objectStoreNames], "readonly");
    const out: Record<string, unknown> = { version: db.version };
    for (const storeName of db.objectStoreNames) {
      const store = tx.objectStore(storeName);
      out[storeName] = {
        keyPath: store.keyPath,
        indexes: [...store.indexNames].map((i) => [i, store.index(i).keyPath, store.index(i).unique]),
        keys: plain(await wait(store.getAllKeys())),
        values: plain(await wait(store.getAll())),
      };
    }
    db.close();
    return out;
  }, dbName);
}

/** A page of a new context started from `storageState`, at the app. */
async function openWith(options: Parameters<Browser["newContext"]>[0]) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  await page.goto(origin);
  return { context, page };
}

describe("storage state", () => {
  it("round-trips a seeded thread byte for byte, and toStorageState builds the same database", async () => {
    const contexts: BrowserContext[] = [];
    try {
      const seeded = await openWith({});
      contexts.push(seeded.context);
      await seedThread(seeded.page, file, { dbName: "app", threadId: "seeded" });
      const original = await dump(seeded.page, "app");
      const state = await readThreadState(seeded.page, "seeded", { dbName: "app" });
      // The dump has what the format relies on: compound keys and bytes.
      expect(JSON.stringify(original)).toMatch(/"Uint8Array":"[0-9a-f]+"/);
      expect((original as { checkpoints: { keys: unknown[][] } }).checkpoints.keys[0]).toHaveLength(3);

      const saved = await seeded.context.storageState({ indexedDB: true });
      const restored = await openWith({ storageState: saved });
      contexts.push(restored.context);
      expect(await dump(restored.page, "app")).toEqual(original);
      expect(await readThreadState(restored.page, "seeded", { dbName: "app" })).toEqual(state);

      const built = await toStorageState([file], { origin, dbName: "app", threadIds: ["seeded"] });
      const fromFiles = await openWith({ storageState: JSON.parse(JSON.stringify(built)) });
      contexts.push(fromFiles.context);
      // Equal but for the times the import wrote (each import stamps the thread row when it runs;
      // two stamps in one millisecond differ by fractions of it: src/saver/context.ts now()), and the
      // thread row's `latest`: a put proven to leave that row as it was does (src/saver/put-proof.ts), so which
      // put wrote it last depends on the clock; listThreads reads the newest checkpoint itself, and the
      // state read below names it (checkpointId).
      const untimed = (value: unknown) => {
        const dumped = value as { threads: { values: { latest?: unknown }[] } };
        const threads = dumped.threads.values.map((row) => ({ ...row, latest: row.latest && "read below" }));
        return JSON.stringify({ ...dumped, threads: { ...dumped.threads, values: threads } }).replace(
          /"(created|updated|written)_at":[\d.]+/g,
          '"$1_at":0',
        );
      };
      expect(untimed(await dump(fromFiles.page, "app"))).toEqual(untimed(original));
      expect(await readThreadState(fromFiles.page, "seeded", { dbName: "app" })).toEqual(state);

      // Neither carries OPFS (journal, wipe marker): the app still opens it as it is, nothing "wiped" or lost.
      for (const { page } of [restored, fromFiles]) {
        expect(await callPage(page, "test", "recovery", { dbName: "app", journal: "opfs" })).toEqual({
          kind: "ok",
          recoveredWrites: 0,
        });
        expect(await readThreadState(page, "seeded", { dbName: "app" })).toEqual(state);
      }
    } finally {
      for (const context of contexts) await context.close();
    }
  }, 60_000);

  it("refuses an origin with a path", async () => {
    await expect(toStorageState([file], { origin: `${origin}/app/` })).rejects.toThrow(
      /origin must be scheme, host and port only/,
    );
  });
});

describe("an app that encrypts", () => {
  const encryption: AppEncryption = {
    passphrase: "correct horse",
    salt: "sixteen byte salt",
    iterations: 1000,
    insecureTestOnlyWeakKdf: true,
  };

  it("is seeded and read with its settings; without them the read says the database is encrypted", async () => {
    const { context, page } = await openWith({});
    try {
      await seedThread(page, file, { dbName: "secret", threadId: "s", encryption });
      const state = await readThreadState(page, "s", { dbName: "secret", encryption });
      await seedThread(page, file, { dbName: "plain", threadId: "s" });
      expect(state).toEqual(await readThreadState(page, "s", { dbName: "plain" }));
      expect(state?.values.messages).not.toHaveLength(0);
      // The stored values are ciphertext: the type tags say aes-gcm.
      expect(JSON.stringify(await dump(page, "secret"))).toMatch(/aes-gcm/);
      await expect(readThreadState(page, "s", { dbName: "secret" })).rejects.toThrow(
        /database "secret" is encrypted.*no key was given.*encryption: \{ passphrase, salt \}/,
      );
      await expect(
        readThreadState(page, "s", { dbName: "secret", encryption: { ...encryption, passphrase: "wrong" } }),
      ).rejects.toThrow(/DecryptionError|[Ww]rong passphrase or key/);

      // toStorageState encrypts with the same settings.
      const built = await toStorageState([file], { origin, dbName: "secret", threadIds: ["s"], encryption });
      const other = await openWith({ storageState: JSON.parse(JSON.stringify(built)) });
      try {
        expect(await readThreadState(other.page, "s", { dbName: "secret", encryption })).toEqual(state);
      } finally {
        await other.context.close();
      }
    } finally {
      await context.close();
    }
  }, 60_000);

  it("seeds, restores and builds storage states from the app's own encrypted exports", async () => {
    const { context, page } = await openWith({});
    try {
      await seedThread(page, file, { dbName: "sealed", threadId: "s", encryption });
      const state = await readThreadState(page, "s", { dbName: "sealed", encryption });
      // The app's export is sealed with its key (format version 2): only its serializer reads it.
      const sealed = await exportThreadFromPage(page, "s", { dbName: "sealed", encryption });
      await seedThread(page, sealed, { dbName: "sealed", threadId: "copy", encryption });
      expect((await readThreadState(page, "copy", { dbName: "sealed", encryption }))?.values).toEqual(state?.values);

      const built = await toStorageState([sealed], { origin, dbName: "sealed", threadIds: ["s"], encryption });
      const other = await openWith({ storageState: JSON.parse(JSON.stringify(built)) });
      try {
        expect((await readThreadState(other.page, "s", { dbName: "sealed", encryption }))?.values).toEqual(
          state?.values,
        );
      } finally {
        await other.context.close();
      }

      // Restoring: with the key, the snapshot's threads replace the database's; without it, or
      // with a wrong one, the files are refused before anything is deleted.
      const snapshot = new Map([["s", sealed]]);
      await expect(restoreThreads(page, snapshot, { dbName: "sealed" })).rejects.toThrow(
        /thread "s" cannot be read, so nothing was restored or deleted: restore: this .lgthread file is encrypted .*\{ encryption: \{ passphrase, salt \} \}/,
      );
      const wrongKey = { dbName: "sealed", encryption: { ...encryption, passphrase: "wrong" } };
      await expect(restoreThreads(page, snapshot, wrongKey)).rejects.toThrow(
        /thread "s" cannot be read, so nothing was restored or deleted: .*does not decrypt/,
      );
      expect(await readThreadState(page, "copy", { dbName: "sealed", encryption })).toBeDefined();
      const restored = await restoreThreads(page, snapshot, { dbName: "sealed", encryption });
      expect(restored).toEqual({ threadIds: ["s"], deleted: ["copy"] });
      expect((await readThreadState(page, "s", { dbName: "sealed", encryption }))?.values).toEqual(state?.values);
      expect(await readThreadState(page, "copy", { dbName: "sealed", encryption })).toBeUndefined();
    } finally {
      await context.close();
    }
  }, 60_000);
});

describe("an app's encrypted export, seeded without its key", () => {
  it("is refused naming the file, not the database, as encrypted, and saying how to seed it", async () => {
    const encryption: AppEncryption = { key: new Uint8Array(32).fill(9) };
    const { context, page } = await openWith({});
    try {
      await seedThread(page, file, { dbName: "sealed", threadId: "s", encryption });
      const sealed = await exportThreadFromPage(page, "s", { dbName: "sealed", encryption });
      const advice = /file is encrypted .*\{ encryption: \{ passphrase, salt \} \}.*unencrypted: true/;
      // Into a plain database: it is the file that is encrypted, not the database.
      const seeding = seedThread(page, sealed, { dbName: "plain", threadId: "s" });
      await expect(seeding).rejects.toThrow(advice);
      await expect(seeding).rejects.not.toThrow(/database "plain" is encrypted/);
      await expect(toStorageState([sealed], { origin, dbName: "plain" })).rejects.toThrow(advice);
      expect(await page.evaluate(async () => (await indexedDB.databases()).map((db) => db.name))).not.toContain(
        "plain",
      );
    } finally {
      await context.close();
    }
  }, 60_000);
});

describe("tabs, offline and sync status", () => {
  it("opens a second tab on the same storage, goes offline and back, and reads the sync status recorder", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await trackSyncStatus(context, { dbName: "app" });
      await page.goto(origin);
      await seedThread(page, file, { dbName: "app", threadId: "shared" });
      const tab = await openTab(page);
      expect(tab.url()).toBe(page.url());
      expect(await readThreadState(tab, "shared", { dbName: "app" })).toEqual(
        await readThreadState(page, "shared", { dbName: "app" }),
      );
      // A run in the second tab holds the thread for the first one too.
      await tab.evaluate(() => {
        void navigator.locks.request("langgraph-checkpoint-indexeddb:v1:app:run:shared", () => new Promise(() => {}));
      });
      await expect(waitForThreadIdle(page, "shared", { dbName: "app", timeout: 300 })).rejects.toThrow(
        /a run still held the thread/,
      );
      await tab.close();
      await waitForThreadIdle(page, "shared", { dbName: "app", stableFor: 0 });

      await setOffline(page, true);
      expect(await page.evaluate(() => navigator.onLine)).toBe(false);
      await expect(page.evaluate(async (url) => (await fetch(url)).status, origin)).rejects.toThrow();
      await setOffline(page, false);
      expect(await page.evaluate(async (url) => (await fetch(url)).status, origin)).toBe(200);

      // The recorder is in the page (installed before it loaded); this page has no SyncClient, so nothing was posted.
      expect(await readSyncStatus(page, { dbName: "app" })).toBeUndefined();
      await expect(waitForSyncStatus(page, () => true, { dbName: "app", timeout: 200 })).rejects.toThrow(
        /no SyncClient status of database "app" passed the predicate within 200 ms; no SyncClient posted a status since the page loaded/,
      );
      await expect(readSyncStatus(page, { dbName: "other" })).rejects.toThrow(
        /does not record the SyncClient status of database "other"\. Call trackSyncStatus/,
      );
    } finally {
      await context.close();
    }
  }, 60_000);
});
