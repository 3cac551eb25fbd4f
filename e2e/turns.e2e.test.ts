/**
 * A long turn measured: a 20,000-character message streams back with no long
 * task. It measures time, so it runs in the timed pass, alone
 * (e2e/vitest.timing.config.ts); the other turn tests are in
 * turn-actions.e2e.test.ts.
 */
import { expect, test } from "vitest";
import { assistants, ready, send, useHarness } from "./support.js";

// The answer must stream (the long tasks are measured while it does).
const harness = useHarness({ pace: "model" });

test("a 20,000-character message round-trips with no long task over 200 ms", async () => {
  const h = harness();
  // Every long task (> 50 ms) the page has, from its start.
  await h.context.addInitScript(() => {
    const tasks: number[] = [];
    (window as unknown as { longTasks: number[] }).longTasks = tasks;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) tasks.push(entry.duration);
    }).observe({ type: "longtask", buffered: true });
  });
  const page = await h.page();
  await ready(page);
  await send(page, "warm up");
  let text = "";
  for (let i = 0; text.length < 20_000; i++) text += `${i % 7 === 6 ? "\n" : ""}token${i} `;
  text = text.slice(0, 20_000).trim();
  expect(text.length).toBeGreaterThan(19_990);
  // Typing the text in: Chromium lays out a 20,000-character textarea (reported, not the app's doing).
  const typed = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks.length);
  await page.getByTestId("composer").fill(text);
  await page.waitForTimeout(1_000);
  const before = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks.length);
  const filling = await page.evaluate(
    ([from, to]) => (window as unknown as { longTasks: number[] }).longTasks.slice(from, to),
    [typed, before],
  );
  console.log(`filling the composer: the longest task ${Math.round(Math.max(0, ...filling))} ms`);
  await page.getByTestId("composer").press("Enter");
  await page.locator(".message.streaming").waitFor();
  await expect.poll(() => assistants(page).count(), { timeout: 30_000 }).toBe(2);
  const answer = (await assistants(page).nth(1).textContent()) ?? "";
  // The answer quotes the whole message, as a block of lines (its line breaks become <br>, which have no text).
  expect(answer.length).toBeGreaterThan(19_000);
  expect(answer).toContain("message 2 of this thread");
  expect(answer.trimEnd().endsWith(text.split(/\s+/).at(-1)!)).toBe(true);
  const tasks = await page.evaluate(
    (from) => (window as unknown as { longTasks: number[] }).longTasks.slice(from),
    before,
  );
  console.log(`20k round trip: ${tasks.length} long tasks, the longest ${Math.round(Math.max(0, ...tasks))} ms`);
  expect(Math.max(0, ...tasks)).toBeLessThan(200);
});
