/**
 * The `./playwright` helpers, end to end: a thread made in Node (on
 * fake-indexeddb) is exported, seeded into a real Chromium page served from
 * localhost (with a strict Content-Security-Policy), read back, and cleared.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBaseMessage } from "@langchain/core/messages";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { expect as playwrightExpect } from "@playwright/test";
import {
  clearThreads,
  exportThreadFromPage,
  readThreadState,
  seedThread,
  threadMatchers,
  waitForCheckpoint,
  type ThreadMatcherOptions,
  waitForThreadIdle,
} from "../../src/playwright.js";
import { callPage, ensurePageApi } from "../../src/playwright/inject.js";
import { receiveBytes } from "../../src/playwright/transfer.js";
import { exportThread, importThread } from "../../src/portable/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { chromiumArgs, chromiumPath } from "../support/chromium.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { Scenario, config, fanOutGraph } from "../support/portable-scenario.js";

let server: Server;
let origin: string;
let browser: Browser;
/** A thread paused inside a subgraph, with a delta channel and pending writes, made once: every test seeds its export. */
const scenario = new Scenario();
let file: Uint8Array;
/** The thread's state as LangGraph reads it (`getState`), and its latest checkpoint as stored. */
let expected: Awaited<ReturnType<ReturnType<Scenario["graph"]>["getState"]>>;
let latest: CheckpointTuple;

beforeAll(async () => {
  server = createServer((request, response) => {
    response.writeHead(request.url === "/" ? 200 : 404, {
      "content-type": "text/html; charset=utf-8",
      // As strict as an app can be: no inline or eval'd script.
      "content-security-policy": "default-src 'self'; script-src 'self'",
    });
    response.end("<!doctype html><title>app under test</title><p>nothing here</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
  const local = new IndexedDBSaver({ dbName: freshDbName("playwright") });
  await scenario.untilInterrupted(local, "t");
  expected = await scenario.graph(local).getState(config("t"));
  latest = (await local.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "" } }))!;
  file = await exportThread(local, "t", { as: "bytes" });
  await local.close();
  await deleteDatabase(local.dbName);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/** The databases the page's origin has. */
function databases(page: Page): Promise<string[]> {
  return page.evaluate(async () => (await indexedDB.databases()).map((db) => db.name ?? ""));
}

describe("seedThread, readThreadState and clearThreads", () => {
  it("seeds a page's database from an exported thread, reads the state back and clears it", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      const seeded = await seedThread(page, file, { dbName: "app", threadId: "seeded" });
      expect(seeded).toMatchObject({ threadId: "seeded", source: "IndexedDBSaver" });
      expect(seeded.checkpoints).toBeGreaterThan(5);

      const state = await readThreadState(page, "seeded", { dbName: "app" });
      expect(state).toMatchObject({
        threadId: "seeded",
        checkpointNs: "",
        checkpointId: latest.checkpoint.id,
        createdAt: latest.checkpoint.ts,
      });
      const messages = state!.values.messages as { type: string; content: string; id: string }[];
      expect(messages.map((m) => [m.type, m.content, m.id])).toEqual(
        expected.values.messages.map((m: { getType(): string; content: unknown; id?: string }) => [
          m.getType(),
          m.content,
          m.id,
        ]),
      );
      // The checkpoint's own values: `side`'s finished result is still a pending write (getState would apply it).
      expect(state!.values.notes).toEqual(latest.checkpoint.channel_values.notes);
      expect(state!.values.notes).toEqual(["side 2"]);
      expect(Object.keys(state!.values).sort()).toEqual(["log", "messages", "notes", "report"]);
      // The second delta channel, rebuilt from its last DeltaSnapshot and later writes.
      const pendingLog = latest
        .pendingWrites!.filter(([, channel]) => channel === "log")
        .flatMap(([, , value]) => value as string[]);
      expect([...(state!.values.log as string[]), ...pendingLog]).toEqual(expected.values.log);
      const channels = state!.pendingWrites.map(([, channel]) => channel);
      expect(channels).toContain("__interrupt__");
      expect(state!.pendingWrites).toContainEqual([expect.any(String), "notes", ["side 5"]]);
      expect(JSON.parse(JSON.stringify(state))).toEqual(state);

      // It is in the page's real IndexedDB: still there after a reload (the script is injected again).
      await page.reload();
      expect(await readThreadState(page, "seeded", { dbName: "app" })).toEqual(state);
      expect(await readThreadState(page, "seeded", { dbName: "app", checkpointNs: "nowhere" })).toBeUndefined();

      // A second seed of the same id is refused unless asked; a file path works too.
      await expect(seedThread(page, file, { dbName: "app", threadId: "seeded" })).rejects.toThrow(
        /already has checkpoints/,
      );
      const dir = await mkdtemp(join(tmpdir(), "lgidb-playwright-"));
      try {
        const path = join(dir, "thread.lgthread");
        await writeFile(path, file);
        await seedThread(page, path, { dbName: "app" });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      expect((await readThreadState(page, "t", { dbName: "app" }))?.values).toEqual(state!.values);

      // Clearing: one thread, then all, then the database itself.
      expect(await clearThreads(page, { dbName: "app", threadIds: ["t"] })).toEqual(["t"]);
      expect(await readThreadState(page, "t", { dbName: "app" })).toBeUndefined();
      await seedThread(page, file, { dbName: "app", threadId: "again" });
      expect((await clearThreads(page, { dbName: "app" })).sort()).toEqual(["again", "seeded"]);
      expect(await readThreadState(page, "seeded", { dbName: "app" })).toBeUndefined();
      expect(await databases(page)).toContain("app");
      await clearThreads(page, { dbName: "app", deleteDatabase: true });
      expect(await databases(page)).not.toContain("app");
    } finally {
      await page.close();
    }
  }, 60_000);

  it("says what to do: navigate first, the dbName that exists, seedThread's own options, error class names", async () => {
    const page = await browser.newPage();
    try {
      // A page that has not navigated anywhere has no IndexedDB: say so, not "SecurityError".
      await expect(seedThread(page, file, { dbName: "app" })).rejects.toThrow(
        /needs the page at your app's origin.*"about:blank".*Navigate there first/,
      );
      await page.goto(origin);
      await seedThread(page, file, { dbName: "app", threadId: "seeded" });
      // A wrong dbName is an error naming the databases the page has (and none is created).
      await expect(readThreadState(page, "seeded", { dbName: "ap" })).rejects.toThrow(
        /no IndexedDB database "ap"; it has "app"/,
      );
      await expect(clearThreads(page, { dbName: "ap" })).rejects.toThrow(/no IndexedDB database "ap"/);
      expect(await databases(page)).not.toContain("ap");
      // The conflict's hint names seedThread's options, not importThread's.
      const conflict = seedThread(page, file, { dbName: "app", threadId: "seeded" });
      await expect(conflict).rejects.toThrow(/already has checkpoints.*\{ threadId: .*ifExists: "replace"/);
      await expect(conflict).rejects.not.toThrow(/targetThreadId/);
      // Error classes keep their names in the page bundle.
      const corrupt = file.slice();
      corrupt[corrupt.length - 3] ^= 0xff;
      await expect(seedThread(page, corrupt, { dbName: "app", threadId: "other" })).rejects.toThrow(/ThreadFileError/);
    } finally {
      await page.close();
    }
  }, 60_000);

  it("after clearThreads deleted the database, a read says so instead of suggesting another dbName", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      await seedThread(page, file, { dbName: "app" });
      await seedThread(page, file, { dbName: "drafts" });
      await clearThreads(page, { dbName: "app", deleteDatabase: true });
      const read = readThreadState(page, "t", { dbName: "app" });
      await expect(read).rejects.toThrow(
        /"app" was deleted in this page by clearThreads\(\{ deleteDatabase: true \}\)/,
      );
      // The name is right: no hint to pass another one.
      await expect(read).rejects.not.toThrow(/dbName: "drafts"/);
      // A wait that times out on it says the same, not "pass the dbName".
      const wait = waitForThreadIdle(page, "t", { dbName: "app", timeout: 300 });
      await expect(wait).rejects.toThrow(/"app".*was deleted in this page by clearThreads/);
      await expect(wait).rejects.not.toThrow(/pass the dbName/);
      // Once the app opens its database again, reads work as before.
      await seedThread(page, file, { dbName: "app" });
      expect((await readThreadState(page, "t", { dbName: "app" }))?.threadId).toBe("t");
    } finally {
      await page.close();
    }
  }, 60_000);

  it("exports a seeded thread from the page with its LangChain messages intact, and waits on it", async () => {
    // The page script keeps LangChain records as plain data: what it writes and exports must still revive as classes.
    const page = await browser.newPage();
    const back = new IndexedDBSaver({ dbName: freshDbName("playwright-export-back") });
    try {
      await page.goto(origin);
      await seedThread(page, file, { dbName: "app", threadId: "seeded" });
      const exported = await exportThreadFromPage(page, "seeded", { dbName: "app" });
      await importThread(back, exported, { targetThreadId: "t" });
      const state = await scenario.graph(back).getState(config("t"));
      expect(state.values.messages.length).toBe(expected.values.messages.length);
      expect(state.values.messages.every((m: unknown) => isBaseMessage(m))).toBe(true);
      expect(state.values.messages.map((m: { toDict(): unknown }) => m.toDict())).toEqual(
        expected.values.messages.map((m: { toDict(): unknown }) => m.toDict()),
      );
      expect(state.values.log).toEqual(expected.values.log);
      await expect(exportThreadFromPage(page, "seeded", { dbName: "nope" })).rejects.toThrow(
        /no IndexedDB database "nope"/,
      );
      // A piece shorter than the staged file's size is refused, not left as zeros in the bytes.
      const staged = await callPage(page, "test", "exportThread", "seeded", { dbName: "app" });
      await expect(receiveBytes(page, "test", { id: staged.id, size: staged.size + 1 })).rejects.toThrow(
        `test: the page sent ${staged.size} bytes of its export at offset 0, not ${staged.size + 1}.`,
      );

      // Nothing runs it in this page: idle at once, on its latest checkpoint; a predicate that holds returns that state.
      const latest = (await readThreadState(page, "seeded", { dbName: "app" }))!;
      expect(await waitForThreadIdle(page, "seeded", { dbName: "app", stableFor: 0 })).toBe(latest.checkpointId);
      expect(latest.next.length + latest.interrupts.length).toBeGreaterThan(0);
      const seen = await waitForCheckpoint(page, "seeded", (s) => s.interrupts.length > 0, { dbName: "app" });
      expect(seen.checkpointId).toBe(latest.checkpointId);
      // A run holding the thread's lock keeps it busy; the timeout says so.
      await page.evaluate(() => {
        void navigator.locks.request("langgraph-checkpoint-indexeddb:v1:app:run:seeded", () => new Promise(() => {}));
      });
      await expect(waitForThreadIdle(page, "seeded", { dbName: "app", timeout: 400 })).rejects.toThrow(
        `waitForThreadIdle: thread "seeded" of database "app" was not idle after 400 ms: last seen, a run still held the thread (latest checkpoint ${latest.checkpointId})`,
      );
    } finally {
      await page.close();
      await back.close();
      await deleteDatabase(back.dbName);
    }
  }, 60_000);
});

describe("a database another connection keeps at an older version", () => {
  it("the waits and matchers fail at their timeout, saying it is blocked, not after the open's own 10 s", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      // What another tab of an older build of the app does: it holds version 1 and ignores versionchange.
      await page.evaluate(
        (name) =>
          new Promise<void>((resolve) => {
            const request = indexedDB.open(name, 1);
            request.onsuccess = () => {
              (globalThis as { held?: IDBDatabase }).held = request.result;
              resolve();
            };
          }),
        "older",
      );
      await ensurePageApi(page); // injected (built, from the sources) before the clocks start
      const withMatchers = playwrightExpect.extend(threadMatchers);
      const waits: [string, () => Promise<unknown>][] = [
        ["waitForThreadIdle", () => waitForThreadIdle(page, "t", { dbName: "older", timeout: 500 })],
        ["waitForCheckpoint", () => waitForCheckpoint(page, "t", () => true, { dbName: "older", timeout: 500 })],
        [
          "toHaveCheckpointCount",
          () => withMatchers(page).toHaveCheckpointCount("t", 1, { dbName: "older", timeout: 500 }),
        ],
      ];
      for (const [name, wait] of waits) {
        const error = await wait().then(
          () => undefined,
          (e: unknown) => e,
        );
        const message = (error as Error).message;
        expect(message).toMatch(/DatabaseBlockedError: Opening IndexedDB "older".*Close the other tabs/);
        // The open gave up within what was left of the wait's 500 ms, as its error says, not at its own
        // 10 s (before, a bound of 2 s on the wall time of the wait, which a loaded machine could pass).
        const blockedFor = Number(/was blocked for (\d+) ms/.exec(message)?.[1]);
        expect(blockedFor, name).toBeGreaterThan(0);
        expect(blockedFor, name).toBeLessThanOrEqual(500);
      }
    } finally {
      await page.close();
    }
  }, 60_000);
});

describe("a fan-out paused before its Sends run", () => {
  it("reads the Send targets as next, as LangGraph's getState does, so toBeInterruptedAt sees them", async () => {
    const local = new IndexedDBSaver({ dbName: freshDbName("playwright-fan") });
    // A run id in the metadata, as runOnThread gives its runs: the matcher then reads a breakpoint.
    await fanOutGraph(local).invoke({ topics: ["ducks", "owls"] }, { ...config("fan"), metadata: { run_id: "r1" } });
    const expected = await fanOutGraph(local).getState(config("fan"));
    expect(expected.next).toEqual(["research", "research"]);
    const file = await exportThread(local, "fan", { as: "bytes" });
    await local.close();
    await deleteDatabase(local.dbName);
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      await seedThread(page, file, { dbName: "app" });
      const state = await readThreadState(page, "fan", { dbName: "app" });
      expect(state?.metadata.run_id).toBe("r1");
      expect(state?.next).toEqual(["research", "research"]);
      await playwrightExpect
        .extend(threadMatchers)(page)
        .toBeInterruptedAt("fan", "research", { dbName: "app", timeout: 300 });
    } finally {
      await page.close();
    }
  }, 60_000);
});

describe("the matchers on an expect that is not Playwright Test's", () => {
  it("fail naming @playwright/test where that expect gives no timeout, and retry where given one", async () => {
    // Vitest's expect: its matcher state has no `timeout`.
    expect.extend(threadMatchers as unknown as Parameters<typeof expect.extend>[0]);
    const vitestExpect = expect as unknown as (page: Page) => {
      toHaveCheckpointCount(threadId: string, count: number, options?: ThreadMatcherOptions): Promise<void>;
    };
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      await seedThread(page, file, { dbName: "app", threadId: "counted" });
      await expect(vitestExpect(page).toHaveCheckpointCount("counted", 999, { dbName: "app" })).rejects.toThrow(
        /toHaveCheckpointCount retries until Playwright Test's expect timeout.*npm install --save-dev @playwright\/test/s,
      );
      // Given a timeout of its own, it retries there too (before, it read once: Vitest's `isNot` is
      // undefined outside `.not`), and fails saying what it read.
      await expect(
        vitestExpect(page).toHaveCheckpointCount("counted", 999, { dbName: "app", timeout: 300 }),
      ).rejects.toThrow(/Checkpoints of thread "counted" of database "app":.*Retried for 300 ms/s);
    } finally {
      await page.close();
    }
  }, 20_000);
});
