/**
 * A long thread's history: rows appear as the checkpoints stream in, one row
 * per turn with a preview, steps on demand. Threads are built quickly with
 * `?pace=0` (the local model answers at once) through the app's own Session.
 */
import type { Page } from "playwright";
import { expect, test } from "vitest";
import { ready, screenshot, useHarness } from "./support.js";

const harness = useHarness();

/** Writes turns `from`..`to` into thread `threadId` with the app's Session. */
async function seed(page: Page, threadId: string, from: number, to: number): Promise<void> {
  // A string, evaluated as written: the page's own module loader imports the app's modules
  // (built beside the app by e2e/global-setup.ts, from e2e/demo-internals.ts).
  await page.evaluate(`(async () => {
    const { Session, DemoDB, plainVault } = await import("/e2e/internals.js");
    const session = await Session.open(new DemoDB(), plainVault);
    for (let i = ${from}; i <= ${to}; i++) await session.send(${JSON.stringify(threadId)}, "question number " + i, () => undefined);
    await session.close();
  })()`);
}

/** Opens the history and times, in the page, its first row and its last. */
async function timeHistory(page: Page): Promise<{ first: number; all: number; turns: number }> {
  return page.evaluate(
    () =>
      new Promise((resolve) => {
        const start = performance.now();
        let first = 0;
        document.querySelector<HTMLButtonElement>('[data-testid="show-history"]')!.click();
        const check = () => {
          if (!first && document.querySelector('#history [data-testid="checkpoint"]'))
            first = performance.now() - start;
          const loading = document.querySelector<HTMLElement>("#history .loading");
          if (first && loading?.hidden) {
            resolve({
              first,
              all: performance.now() - start,
              turns: document.querySelectorAll("#history .branch.current .turn").length,
            });
          } else requestAnimationFrame(check);
        };
        requestAnimationFrame(check);
      }),
  );
}

/** Opens the thread afresh, times its history, and checks the rows. */
async function checkHistory(page: Page, threadId: string, turns: number, firstLimit: number, allLimit: number) {
  await page.goto(new URL(`?pace=0#/thread/${threadId}`, page.url()).href);
  await page.reload();
  await ready(page);
  await page
    .locator('[data-testid="message"]')
    .nth(2 * turns - 1)
    .waitFor({ timeout: 30_000 });
  // Time the history, not the page still settling after its load.
  await page.evaluate(() => new Promise((resolve) => requestIdleCallback(resolve, { timeout: 3_000 })));
  const timing = await timeHistory(page);
  console.log(
    `history of ${turns} turns: first row ${Math.round(timing.first)} ms, all rows ${Math.round(timing.all)} ms`,
  );
  expect(timing.turns).toBe(turns);
  expect(timing.first).toBeLessThan(firstLimit);
  expect(timing.all).toBeLessThan(allLimit);
  // One row per turn, with its question; the steps open on demand.
  const newest = page.locator("#history .turn").first();
  expect(await newest.locator(".question").textContent()).toBe(`question number ${turns}`);
  expect(await newest.locator(".steps li").count()).toBe(0);
  await newest.locator(".steps-toggle").click();
  await expect.poll(() => newest.locator(".steps li").count()).toBeGreaterThan(1);
  await screenshot(page, `history-${turns}`);
}

// One thread, timed at 100 turns and again at 300 (seeding is most of this file's time).
test(
  "history of 100 turns: first rows under 500 ms, all under 1000 ms; of 300 turns: first rows under 1000 ms, all under 1000 ms",
  { timeout: 240_000 },
  async () => {
    const page = await harness().page("?pace=0");
    await ready(page);
    const threadId = `SEED${Date.now()}`;
    await seed(page, threadId, 1, 100);
    await checkHistory(page, threadId, 100, 500, 1_000);
    // Away from the thread while it grows: the open view would redraw at every seeded turn.
    await page.goto(new URL("?pace=0#/thread/ELSEWHERE", page.url()).href);
    await seed(page, threadId, 101, 300);
    // Issue 13's goal: every row of 300 turns in under 1 s (was 16.6 s, then 0.87 s). Measured 0.58-0.71 s
    // here (median 0.60 s of 7) after list() pages read their writes and blobs in a few requests.
    await checkHistory(page, threadId, 300, 1_000, 1_000);
  },
);
