/**
 * Quota (reliability issue, part 3), in a real Chromium driven by Playwright:
 * the page (test/pages/reliability-quota.*) runs IndexedDBSaver on a served
 * origin, and the origin's quota is lowered through the DevTools protocol
 * (`Storage.overrideQuotaForOrigin`). A write that does not fit fails with a
 * recognisable `QuotaExceededError` (`isQuotaError`, the browser's error as
 * `cause`), leaves no partial checkpoint (no row of it in any store), earlier
 * data reads fine, a small write batched with the failing one still commits,
 * and once `deleteThread` frees space the same write succeeds.
 *
 * Also, without a browser: quota failures are recognised when they arrive
 * wrapped in an `AbortError` (as `cause`, or as the transaction's error) or
 * under Firefox's name.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type CDPSession, type Page } from "playwright";
import { build, preview, type PreviewServer } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumArgs, chromiumPath } from "../support/chromium.js";
import { IndexedDBCheckpointError, QuotaExceededError, isQuotaError, toPackageError } from "../../src/core/errors.js";
import type { QuotaPage } from "../pages/reliability-quota.js";

const here = dirname(fileURLToPath(import.meta.url));
const pages = resolve(here, "../pages");
const MB = 1024 * 1024;
/** The origin's quota: room for the data below (about 4.2 MB) but not for 3 MB more. */
const QUOTA = 6 * MB;

let server: PreviewServer;
let origin: string;
let outDir: string;
let profile: string;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;

beforeAll(async () => {
  outDir = mkdtempSync(join(tmpdir(), "quota-page-"));
  await build({
    root: pages,
    configFile: false,
    logLevel: "error",
    build: {
      outDir,
      emptyOutDir: true,
      minify: false,
      rollupOptions: { input: join(pages, "reliability-quota.html") },
    },
  });
  server = await preview({
    root: pages,
    configFile: false,
    logLevel: "error",
    build: { outDir },
    preview: { host: "127.0.0.1", port: 0 },
  });
  origin = `http://127.0.0.1:${(server.httpServer.address() as { port: number }).port}`;
  // A disk-backed profile: quota and usage as a real install sees them.
  profile = mkdtempSync(join(tmpdir(), "quota-profile-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    args: chromiumArgs,
    headless: true,
  });
  page = context.pages()[0] ?? (await context.newPage());
  cdp = await context.newCDPSession(page);
  // Before the origin first touches IndexedDB: Chromium 156 reads an origin's
  // quota when its storage bucket opens, and ignores later overrides.
  await cdp.send("Storage.overrideQuotaForOrigin", { origin, quotaSize: QUOTA });
  await page.goto(`${origin}/reliability-quota.html`);
  await page.waitForFunction(() => "quotaPage" in window);
}, 120_000);

afterAll(async () => {
  await context?.close();
  await server?.close();
  for (const dir of [outDir, profile]) if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Calls `window.quotaPage[name](...args)` in the page. */
function call<K extends keyof QuotaPage>(
  name: K,
  ...args: Parameters<QuotaPage[K]>
): Promise<Awaited<ReturnType<QuotaPage[K]>>> {
  return page.evaluate(
    ([name, args]) =>
      (window as unknown as { quotaPage: Record<string, (...a: unknown[]) => unknown> }).quotaPage[name]!(...args),
    [name, args] as const,
  ) as Promise<Awaited<ReturnType<QuotaPage[K]>>>;
}

describe("a write that does not fit the origin's quota", () => {
  it("fails with QuotaExceededError, leaves no partial checkpoint, keeps earlier data, and succeeds once deleteThread frees space", async () => {
    const figures: Record<string, unknown> = {};
    // Earlier data: a small thread that must stay readable, and a big one to delete later.
    await call("fill", "keep", 5, 20_000);
    await call("fill", "big", 4, 1 * MB);
    const keepBefore = await call("read", "keep");
    const bigBefore = await call("read", "big");
    expect(keepBefore.ok && bigBefore.ok).toBe(true);
    figures.quota = QUOTA;
    figures.usageBefore = (await cdp.send("Storage.getUsageAndQuota", { origin })).usage;

    // What Chromium reports for a raw write that does not fit.
    figures.raw = await call("rawProbe", 3 * MB);

    // 1. A 3 MB checkpoint does not fit.
    const failed = await call("putOn", "keep", 3 * MB);
    expect(failed.ok).toBe(false);
    if (!failed.ok) {
      expect(failed.error).toMatchObject({
        name: "QuotaExceededError",
        isQuotaError: true,
        isQuotaExceededError: true,
        isPackageError: true,
      });
      expect(failed.error.causeName).toBe("QuotaExceededError");
      expect(failed.error.message).toMatch(/ran out of storage quota while trying to put checkpoint/);
      expect(failed.error.message).toMatch(/deleteThread|persist/);
      figures.putError = failed.error;
    }
    // A 3 MB write (putWrites) neither.
    const failedWrites = await call("putWrites", "keep", 3 * MB);
    expect(failedWrites).toMatchObject({ ok: false, error: { name: "QuotaExceededError", isQuotaError: true } });

    // 2. No partial checkpoint: reads and raw rows are as before.
    expect(await call("read", "keep")).toEqual(keepBefore);
    const raw = await call("rawRows", "keep");
    expect(raw.checkpoints).toHaveLength(5);
    // Data and size, per checkpoint: in blob rows or (row format 2) inline in the checkpoint rows.
    expect(raw.blobs.length + raw.inline.length).toBe(10);
    expect(raw.writes).toHaveLength(0);

    // 3. Earlier data reads fine, including the big thread.
    expect(await call("read", "big")).toEqual(bigBefore);

    // 4. A small write batched with a failing one still commits; the big one alone fails.
    const together = await call("together", "keep", 3 * MB, "small");
    expect(together.big).toMatchObject({ ok: false, error: { name: "QuotaExceededError" } });
    expect(together.small.ok).toBe(true);
    const small = await call("read", "small");
    expect(small.ok && small.value.tuples.length).toBe(1);
    expect(await call("read", "keep")).toEqual(keepBefore);

    // 5. Free space, and the same write succeeds.
    expect((await call("deleteThread", "big")).ok).toBe(true);
    figures.usageAfterDelete = (await cdp.send("Storage.getUsageAndQuota", { origin })).usage;
    const retried = await call("putOn", "keep", 3 * MB);
    expect(retried).toMatchObject({ ok: true });
    const keepAfter = await call("read", "keep");
    expect(keepAfter.ok && keepAfter.value.tuples.length).toBe(6);
    expect(keepAfter.ok && keepAfter.value.tuples[0]!.bytes).toBe(3 * MB);
    expect(keepAfter.ok && keepAfter.value.tuples.slice(1)).toEqual(keepBefore.ok && keepBefore.value.tuples);
    figures.usageAfterRetry = (await cdp.send("Storage.getUsageAndQuota", { origin })).usage;
    expect(await call("unhandled")).toEqual([]);
    console.info(`[quota] ${JSON.stringify(figures)}`);
  }, 60_000);
});

describe("quota failures are recognised however they arrive", () => {
  const quota = () => new DOMException("The current transaction exceeded its quota limitations.", "QuotaExceededError");

  it("directly, as the cause of an AbortError, under Firefox's name, and by message", () => {
    const abortWrapping = Object.assign(new Error("The transaction was aborted, so the request cannot be fulfilled."), {
      name: "AbortError",
      cause: quota(),
    });
    const firefox = Object.assign(new Error("QuotaExceededError"), { name: "NS_ERROR_DOM_QUOTA_REACHED" });
    const safari = new DOMException("Transaction aborted: quota exceeded", "AbortError");
    for (const error of [quota(), abortWrapping, firefox, safari, new QuotaExceededError("x")])
      expect(isQuotaError(error)).toBe(true);
    for (const error of [
      new DOMException("The transaction was aborted.", "AbortError"),
      new Error("nope"),
      null,
      undefined,
      "quota",
    ]) {
      expect(isQuotaError(error)).toBe(false);
    }
  });

  it("toPackageError turns each into QuotaExceededError with the browser's error as cause", () => {
    const abortWrapping = Object.assign(new Error("aborted"), { name: "AbortError", cause: quota() });
    for (const error of [quota(), abortWrapping]) {
      const wrapped = toPackageError(error, "put checkpoint");
      expect(wrapped).toBeInstanceOf(QuotaExceededError);
      expect(wrapped).toBeInstanceOf(IndexedDBCheckpointError);
      expect((wrapped as Error & { cause?: unknown }).cause).toBe(error);
      expect(wrapped.message).toMatch(/put checkpoint/);
    }
    // A plain abort stays a plain package error.
    expect(toPackageError(new DOMException("aborted", "AbortError"), "put checkpoint")).not.toBeInstanceOf(
      QuotaExceededError,
    );
  });
});
