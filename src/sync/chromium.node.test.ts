/**
 * Sync between two real browsers: two Chromium contexts (separate profiles:
 * separate IndexedDB, no shared storage) as two devices, each running the app
 * page (test/pages/sync.ts) against the sync server on the real PostgreSQL.
 * The page reaches the server through its own origin (the preview server
 * proxies `/v1`), as an app behind one reverse proxy would.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright";
import { build, preview, type PreviewServer } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumArgs, chromiumPath } from "../../test/support/chromium.js";
import { newUser, startServer } from "../../test/support/sync/harness.js";
import { trackSyncStatus, waitForSyncStatus } from "../playwright/sync-status.js";
import type { SyncServer } from "../sync-server.js";

const pages = resolve(dirname(fileURLToPath(import.meta.url)), "../../test/pages");
let sync: SyncServer;
let site: PreviewServer;
let origin: string;
let outDir: string;
let browser: Browser;

beforeAll(async () => {
  const started = await startServer();
  sync = started.server;
  outDir = mkdtempSync(join(tmpdir(), "sync-page-build-"));
  await build({
    root: pages,
    configFile: false,
    logLevel: "error",
    build: { outDir, emptyOutDir: true, minify: false, rollupOptions: { input: join(pages, "sync.html") } },
  });
  site = await preview({
    root: pages,
    configFile: false,
    logLevel: "error",
    build: { outDir },
    preview: { host: "127.0.0.1", port: 0, proxy: { "/v1": started.url } },
  });
  origin = `http://127.0.0.1:${(site.httpServer.address() as { port: number }).port}`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((done) => site?.httpServer.close(done));
  await sync?.close();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
}, 30_000);

interface DeviceApi {
  chat(threadId: string, text: string): Promise<unknown>;
  sync(): Promise<{ ok: boolean; code?: string; result?: { pushed: number; pulled: number } }>;
  state(threadId: string): Promise<{ messages: [string, string][]; checkpointId?: string }>;
  ids(threadId: string): Promise<string[]>;
  deleteThread(threadId: string): Promise<void>;
  statuses(): { state: string; pending: number; remote: boolean }[];
  changes(): string[];
}

/** The message a promise rejects with (a test that resolves fails). */
async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("expected a rejection");
}

/** Calls `window.device[method](...args)` in the page. */
function call<K extends keyof DeviceApi>(
  page: Page,
  method: K,
  ...args: Parameters<DeviceApi[K]>
): Promise<Awaited<ReturnType<DeviceApi[K]>>> {
  return page.evaluate(
    ([name, list]) =>
      (window as unknown as { device: Record<string, (...a: unknown[]) => unknown> }).device[name]!(...list),
    [method, args] as const,
  ) as Promise<Awaited<ReturnType<DeviceApi[K]>>>;
}

async function open(context: BrowserContext, token: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${origin}/sync.html?token=${encodeURIComponent(token)}`);
  await page.waitForFunction(() => document.title === "ready");
  return page;
}

describe("sync between two Chromium profiles", () => {
  it("offline on A, then B; both offline then sync: one head, every turn; a delete propagates", async () => {
    const { token } = newUser("chromium");
    const contextA = await browser.newContext();
    const contextB = await browser.newContext();
    try {
      const a = await open(contextA, token);
      const b = await open(contextB, token);

      // A is offline: the chat works, the sync says offline with changes waiting.
      await contextA.setOffline(true);
      await call(a, "chat", "trip", "plan a trip");
      const offline = await call(a, "sync");
      expect(offline).toMatchObject({ ok: false, code: "offline" });
      expect((await call(a, "statuses")).at(-1)).toMatchObject({ state: "offline", pending: 3, remote: false });

      // Back online: A pushes, B pulls, the same thread on both.
      await contextA.setOffline(false);
      expect(await call(a, "sync")).toMatchObject({ ok: true, result: { pushed: 3 } });
      expect(await call(b, "sync")).toMatchObject({ ok: true, result: { pulled: 3 } });
      expect(await call(b, "state", "trip")).toEqual(await call(a, "state", "trip"));
      expect(await call(b, "changes")).toContain("put:trip:false");

      // Both offline, both write, then sync: the union, one head.
      await contextA.setOffline(true);
      await contextB.setOffline(true);
      await call(a, "chat", "trip", "A: by train");
      await call(b, "chat", "trip", "B: by plane");
      const heads = [(await call(a, "state", "trip")).checkpointId!, (await call(b, "state", "trip")).checkpointId!];
      await contextA.setOffline(false);
      await contextB.setOffline(false);
      for (const page of [a, b, a]) expect((await call(page, "sync")).ok).toBe(true);
      const ids = await call(a, "ids", "trip");
      expect(await call(b, "ids", "trip")).toEqual(ids);
      expect(ids).toEqual(expect.arrayContaining(heads));
      const onA = await call(a, "state", "trip");
      expect(onA.checkpointId).toBe(heads.sort().at(-1));
      expect(await call(b, "state", "trip")).toEqual(onA);

      // A deletes; B loses the thread too.
      await call(a, "deleteThread", "trip");
      await call(a, "sync");
      await call(b, "sync");
      expect(await call(b, "ids", "trip")).toEqual([]);
    } finally {
      await contextA.close();
      await contextB.close();
    }
  });

  it("two tabs of one profile: the other tab sees the syncing tab's status", async () => {
    const { token } = newUser("tabs");
    const context = await browser.newContext();
    try {
      const first = await open(context, token);
      const second = await open(context, token);
      await call(first, "chat", "t", "hi");
      expect((await call(first, "sync")).ok).toBe(true);
      await expect
        .poll(async () => (await call(second, "statuses")).some((s) => s.remote && s.state === "syncing"), {
          timeout: 5000,
        })
        .toBe(true);
    } finally {
      await context.close();
    }
  });

  it("the kit's waitForSyncStatus with since waits for a round that began after the write", async () => {
    const { token } = newUser("kit-since");
    const context = await browser.newContext();
    try {
      await trackSyncStatus(context, { dbName: "app" });
      const page = await open(context, token);
      // The docs' "synced" predicate; "stopped", not "idle": this page syncs on demand, never start()ed.
      const synced = (s: { state: string; pending: number }) => s.state === "stopped" && s.pending === 0;
      await call(page, "chat", "t", "hi");
      expect((await call(page, "sync")).ok).toBe(true);
      await waitForSyncStatus(page, synced, { dbName: "app", timeout: 2000 });

      // The write is committed when chat resolves; the status is still the round's before it.
      await call(page, "chat", "t", "again");
      const since = Date.now();
      const stale = await failure(waitForSyncStatus(page, synced, { dbName: "app", since, timeout: 300 }));
      expect(stale).toMatch(/of a round that began after .*the last status seen is of an earlier round/);

      const waiting = waitForSyncStatus(page, synced, { dbName: "app", since, timeout: 5000 });
      const round = await call(page, "sync");
      expect(round.ok && round.result!.pushed).toBeGreaterThan(0);
      expect((await waiting).lastSyncStartedAt).toBeGreaterThan(since);
    } finally {
      await context.close();
    }
  });
});
