/**
 * Long turns measured: a 20,000-character message streams back with no long
 * task, and a turn sent in a thread of 300 turns does not draw the 300 again.
 * They measure time, so they run in the timed pass, alone
 * (e2e/vitest.timing.config.ts); the other turn tests are in
 * turn-streaming.e2e.test.ts, turn-endpoint.e2e.test.ts and
 * turn-edit.e2e.test.ts.
 */
import type { BrowserContext, Page } from "playwright";
import { expect, test } from "vitest";
import { HISTORY_FIXTURES, importFixture } from "./fixtures/history.js";
import { assistants, ready, send, useHarness } from "./support.js";

// The answer must stream (the long tasks are measured while it does).
const harness = useHarness({ pace: "model" });

/** Records every long task (> 50 ms) of the context's pages, from their start: read with {@link longTasks}. */
async function recordLongTasks(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const tasks: number[] = [];
    (window as unknown as { longTasks: number[] }).longTasks = tasks;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) tasks.push(entry.duration);
    }).observe({ type: "longtask", buffered: true });
  });
}

/** The durations of the page's long tasks so far, from the `from`th. */
function longTasks(page: Page, from = 0): Promise<number[]> {
  return page.evaluate((from) => (window as unknown as { longTasks: number[] }).longTasks.slice(from), from);
}

/** Resolves once the page has been idle (no task due) twice in a row. */
function settled(page: Page): Promise<unknown> {
  return page.evaluate(async () => {
    for (let i = 0; i < 2; i++) await new Promise((resolve) => requestIdleCallback(resolve, { timeout: 3_000 }));
  });
}

test("a 20,000-character message round-trips with no long task over 200 ms", async () => {
  const h = harness();
  await recordLongTasks(h.context);
  const page = await h.page();
  await ready(page);
  await send(page, "warm up");
  let text = "";
  for (let i = 0; text.length < 20_000; i++) text += `${i % 7 === 6 ? "\n" : ""}token${i} `;
  text = text.slice(0, 20_000).trim();
  expect(text.length).toBeGreaterThan(19_990);
  // Typing the text in: Chromium lays out a 20,000-character textarea (reported, not the app's doing).
  const typed = (await longTasks(page)).length;
  await page.getByTestId("composer").fill(text);
  await page.waitForTimeout(1_000);
  const filling = await longTasks(page, typed);
  const before = typed + filling.length;
  console.log(`filling the composer: the longest task ${Math.round(Math.max(0, ...filling))} ms`);
  await page.getByTestId("composer").press("Enter");
  await page.locator(".message.streaming").waitFor();
  await expect.poll(() => assistants(page).count(), { timeout: 30_000 }).toBe(2);
  const answer = (await assistants(page).nth(1).textContent()) ?? "";
  // The answer quotes the whole message, as a block of lines (its line breaks become <br>, which have no text).
  expect(answer.length).toBeGreaterThan(19_000);
  expect(answer).toContain("message 2 of this thread");
  expect(answer.trimEnd().endsWith(text.split(/\s+/).at(-1)!)).toBe(true);
  const tasks = await longTasks(page, before);
  console.log(`20k round trip: ${tasks.length} long tasks, the longest ${Math.round(Math.max(0, ...tasks))} ms`);
  expect(Math.max(0, ...tasks)).toBeLessThan(200);
});

/**
 * Sending in a thread of 300 turns: the turn is added to the log, not the
 * whole log drawn again (each full redraw, of 600 messages' Markdown, was a
 * task of 101-272 ms on a quiet machine, several per turn: the run's steps,
 * its end, the branch switchers; 1-4 s each with the machine loaded).
 * Counted from Enter until the page has settled, over two turns: the
 * messages put in the log (600 and more per redraw before, a handful now),
 * and the long tasks (the longest was 1.1-3.9 s under a load average of
 * 20 on 2 cores before, 0.4-0.6 s after; the bound is for that load).
 */
test(
  "a turn sent in a thread of 300 turns draws only its own messages, with no task over 1 s",
  { timeout: 120_000 },
  async () => {
    const h = harness();
    await recordLongTasks(h.context);
    // Every message bubble put in the log, from the page's start.
    await h.context.addInitScript(() => {
      const counter = { drawn: 0 };
      (window as unknown as { messagesDrawn: typeof counter }).messagesDrawn = counter;
      new MutationObserver((records) => {
        for (const record of records)
          for (const node of record.addedNodes)
            if (node instanceof HTMLElement && node.classList.contains("message")) counter.drawn++;
      }).observe(document, { childList: true, subtree: true });
    });
    const drawn = () =>
      page.evaluate(() => (window as unknown as { messagesDrawn: { drawn: number } }).messagesDrawn.drawn);
    const page: Page = await h.page("", { pace: "fast" });
    await ready(page);
    const fixture = HISTORY_FIXTURES.find((f) => f.turns === 300)!;
    const threadId = await importFixture(page, fixture.path);
    await page.goto(new URL(`#/thread/${threadId}`, page.url()).href);
    await page.reload();
    await ready(page);
    const messages = page.locator('[data-testid="message"]');
    await messages.nth(599).waitFor({ timeout: 30_000 });
    await settled(page);
    const slow: number[] = [];
    for (const n of [301, 302]) {
      const before = (await longTasks(page)).length;
      const drawnBefore = await drawn();
      await send(page, `question number ${n}`);
      await expect.poll(() => messages.count()).toBe(2 * n);
      await expect.poll(() => page.getByTestId("stop").isVisible()).toBe(false);
      await settled(page);
      const tasks = await longTasks(page, before);
      const messagesDrawn = (await drawn()) - drawnBefore;
      console.log(
        `turn ${n} of a 300-turn thread: ${messagesDrawn} messages drawn, long tasks ${tasks.map(Math.round).join(", ") || "none"} ms`,
      );
      // The question (pending, then as the run has it, then as committed), the answer streamed, then drawn.
      expect(messagesDrawn).toBeLessThan(12);
      slow.push(...tasks.filter((ms) => ms > 1_000));
    }
    expect(slow).toEqual([]);
  },
);
