/**
 * Human in the loop: "remember that …" pauses the run on a save_memory tool
 * call; the approval card survives a reload; an approved memory is recalled
 * in another thread, a rejected one never is.
 */
import type { Page } from "playwright";
import { expect, test } from "vitest";
import { ready, screenshot, send, transcript, useHarness } from "./support.js";

const harness = useHarness();

async function lastAssistant(page: Page): Promise<string> {
  return (await page.locator('[data-testid="message"][data-role="assistant"]').last().textContent()) ?? "";
}

test("with no approved memory there is nothing to recall; an approved one is recalled in a new thread, a rejected one never is", async () => {
  const page = await harness().page();
  await ready(page);
  // First, in this fresh context, with no memory approved yet.
  await send(page, "remember that I live in Lisbon", { expectReply: false });
  await page.getByTestId("approval").waitFor();
  await page.getByTestId("reject").click();
  await expect.poll(() => lastAssistant(page)).toMatch(/won't remember/i);
  await send(page, "What do you remember?");
  const nothing = await lastAssistant(page);
  expect(nothing).toMatch(/don't remember anything/i);
  expect(nothing).not.toContain("Lisbon");

  // Then a thread of its own for the memory approved.
  await page.getByTestId("new-thread").click();
  await expect.poll(() => transcript(page)).toEqual([]);
  await send(page, "remember that my favourite colour is teal", { expectReply: false });
  const approval = page.getByTestId("approval");
  await approval.waitFor();
  // The card holds the memory in its editor, as it will be saved.
  const memory = page.getByTestId("approval-args");
  expect(await memory.inputValue()).toBe("my favourite colour is teal");
  await screenshot(page, "approval");

  // The pause is in the saver: the card is back after a reload.
  await page.reload();
  await ready(page);
  await approval.waitFor();
  expect(await memory.inputValue()).toBe("my favourite colour is teal");

  await page.getByTestId("approve").click();
  await expect.poll(() => approval.count()).toBe(0);
  await expect.poll(() => lastAssistant(page)).toContain("teal");

  // A memory the user rejects.
  await send(page, "remember that my password is hunter2", { expectReply: false });
  await approval.waitFor();
  await page.getByTestId("reject").click();
  await expect.poll(() => approval.count()).toBe(0);
  await expect.poll(() => lastAssistant(page)).toMatch(/won't remember/i);

  // Another thread, the same user: recall.
  await page.getByTestId("new-thread").click();
  await expect.poll(() => transcript(page)).toEqual([]);
  await send(page, "what do you remember about me?");
  const answer = await lastAssistant(page);
  expect(answer).toContain("teal");
  expect(answer).not.toContain("hunter2");
  expect(await page.getByTestId("approval").count()).toBe(0);

  // A question about one topic: the store's semantic search picks the memory about it.
  await send(page, "remember that I play the cello", { expectReply: false });
  await page.getByTestId("approve").click();
  await expect.poll(() => lastAssistant(page)).toContain("cello");
  await send(page, "what do you remember about my favourite colour?");
  const colour = await lastAssistant(page);
  expect(colour).toContain("teal");
  expect(colour).not.toContain("cello");
  await send(page, "what do you remember about my cars?");
  expect(await lastAssistant(page)).toMatch(/don't remember anything about your cars/i);

  // Still so after a reload.
  const before = await transcript(page);
  await page.reload();
  await ready(page);
  await expect.poll(() => transcript(page)).toEqual(before);
});
