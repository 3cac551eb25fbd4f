/**
 * A turn while its answer streams: the reader scrolled up is not pulled
 * down, Stop keeps what was written, and a reload mid-answer shows the turn
 * cut short, which Retry finishes. The long turn that is measured is in
 * turns.e2e.test.ts; Edit in turn-edit.e2e.test.ts; a model endpoint's
 * errors and Regenerate in turn-endpoint.e2e.test.ts.
 */
import type { Page } from "playwright";
import { expect, test } from "vitest";
import {
  assistants,
  longMessage,
  ready,
  screenshot,
  seedTurns,
  send,
  setPace,
  submit,
  transcript,
  useHarness,
} from "./support.js";

// Each test starts at a fresh thread of one kept page (one boot for the file, not one per test).
const harness = useHarness({ keepPage: true });

/** The sidebar row of the thread open in `page`. */
const currentRow = (page: Page) =>
  page.locator(`[data-testid="thread"][data-thread-id="${new URL(page.url()).hash.replace("#/thread/", "")}"]`);

test("the reader scrolled up is not pulled down: a button offers the new text", async () => {
  // The turns before only make the log taller than the view: written at once; then the model's
  // pace (no reload) for the answer that streams while the reader is scrolled up.
  const page = await harness().thread();
  await seedTurns(
    page,
    "SCROLLEDUP",
    [1, 2, 3].map((n) => `${longMessage(60)} filler ${n}`),
  );
  await setPace(page, "model");
  await submit(page, longMessage(400));
  await page.locator(".message.streaming").waitFor();
  await page.locator(".messages").evaluate((log) => (log.scrollTop = 0));
  await page.getByTestId("new-messages").waitFor();
  expect(await page.locator(".messages").evaluate((log) => log.scrollTop)).toBeLessThan(50);
  await screenshot(page, "new-messages");
  await page.getByTestId("new-messages").click();
  await expect
    .poll(() => page.locator(".messages").evaluate((log) => log.scrollHeight - log.scrollTop - log.clientHeight))
    .toBeLessThan(50);
});

test("Stop keeps what was written, marked stopped, also after a thread switch mid-answer, a reload and the next turn", async () => {
  // The slow pace: the answer is still streaming after a trip to another thread and back.
  const page = await harness().thread({ pace: "slow" });
  const row = currentRow(page);
  await submit(page, longMessage(400));
  await page.getByTestId("thinking").waitFor();
  expect(await page.locator(".messages").getAttribute("aria-busy")).toBe("true");
  const streaming = page.locator(".message.streaming");
  await expect.poll(() => streaming.textContent()).toContain("word30 ");
  await screenshot(page, "streaming");

  // Another thread, then back: the bubble shows the answer from its first word, not from where it was left.
  await page.getByTestId("new-thread").click();
  await page.locator(".welcome").waitFor();
  await row.click();
  await expect.poll(() => streaming.textContent()).toMatch(/^You said: “word0 word1 word2 .* word3\d+ /);

  await page.getByTestId("stop").click();
  const note = page.getByTestId("stopped-note");
  await note.waitFor();
  expect(await page.getByTestId("stop").isVisible()).toBe(false);
  expect(await page.locator(".messages").getAttribute("aria-busy")).toBe("false");
  // The text streamed so far is kept as the answer, with Retry.
  const kept = (await assistants(page).first().textContent()) ?? "";
  expect(kept).toMatch(/^You said: “word0 word1 /);
  expect(kept).not.toContain("word399");
  expect(await page.getByTestId("retry").count()).toBe(1);
  // Stop, gone with the run, leaves the focus in the composer, not on the page.
  expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("composer");
  await screenshot(page, "stopped");

  // Saved: after a reload (at once from here on), and after the next turn, still there and still marked.
  const url = new URL(page.url());
  url.searchParams.set("pace", "0");
  await page.goto(url.href);
  await ready(page);
  await note.waitFor();
  expect(await assistants(page).first().textContent()).toBe(kept);
  await send(page, "after the stop");
  expect(await note.count()).toBe(1);
  expect(await assistants(page).first().textContent()).toBe(kept);
  // Retry belongs to the latest turn only.
  expect(await page.getByTestId("retry").count()).toBe(0);
});

test("a reload mid-answer: the turn shows it was cut short, and Retry finishes it", async () => {
  const page = await harness().thread({ pace: "model" });
  await send(page, "first");
  await submit(page, longMessage(400));
  await page.locator(".message.streaming").waitFor();
  // Reloaded at once (`?pace=0`): the cut is what is shown; Retry's answer need not stream again.
  const url = new URL(page.url());
  url.searchParams.set("pace", "0");
  await page.goto(url.href);
  await ready(page);
  const status = page.getByTestId("turn-status");
  await status.waitFor();
  expect(await status.getAttribute("data-kind")).toBe("interrupted");
  expect(await status.textContent()).toContain("cut short");
  await screenshot(page, "interrupted");
  await page.getByTestId("retry").click();
  await expect.poll(() => assistants(page).count(), { timeout: 20_000 }).toBe(2);
  await page.reload();
  await ready(page);
  await expect.poll(() => transcript(page)).toHaveLength(4);
  expect(await page.getByTestId("turn-status").count()).toBe(0);
});
