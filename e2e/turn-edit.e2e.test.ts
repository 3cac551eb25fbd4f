/**
 * Edit a message: a fork of the checkpoint before it, the switcher between
 * its versions, an editor kept over a reload, and one kept while an answer
 * streams and another tab writes. The other turn actions are in
 * turn-streaming.e2e.test.ts and turn-endpoint.e2e.test.ts.
 */
import { expect, test } from "vitest";
import {
  assistants,
  longMessage,
  ready,
  screenshot,
  seedTurns,
  send,
  submit,
  threadAction,
  transcript,
  useHarness,
} from "./support.js";

// Each test starts at a fresh thread of one kept page (one boot for the file, not one per test).
const harness = useHarness({ keepPage: true });

test("Edit a message: a fork of the checkpoint before it; the original branch stays", async () => {
  const page = await harness().thread();
  await seedTurns(page, "EDITED", ["turn one", "turn two", "turn three"]);
  const users = page.locator('[data-testid="message"][data-role="user"]');
  expect(await page.getByTestId("edit").count()).toBe(3);

  // Escape cancels an edit.
  await page.getByTestId("edit").nth(1).click();
  await page.getByTestId("edit-text").waitFor();
  await page.keyboard.press("Escape");
  await expect.poll(() => page.getByTestId("edit-text").count()).toBe(0);
  expect(await transcript(page)).toHaveLength(6);
  // The focus goes back to the message's Edit button, not to the page.
  expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("edit");
  expect(
    await page
      .getByTestId("edit")
      .nth(1)
      .evaluate((el) => el === document.activeElement),
  ).toBe(true);
  // Message actions are buttons one sees and hits: body-sized text, at least 28 px tall.
  const edit = page.getByTestId("edit").nth(1);
  expect((await edit.boundingBox())!.height).toBeGreaterThanOrEqual(28);
  expect(await edit.evaluate((el) => parseFloat(getComputedStyle(el).fontSize))).toBeGreaterThanOrEqual(13);

  await page.getByTestId("edit").nth(1).click();
  // While its editor is open, the message's own actions (Copy, Edit) are not left standing under it.
  await page.getByTestId("edit-text").waitFor();
  expect(await page.getByTestId("edit").nth(1).isVisible()).toBe(false);
  expect(await page.getByTestId("edit").nth(0).isVisible()).toBe(true);
  await page.getByTestId("edit-text").fill("turn two, edited");
  await screenshot(page, "editing");
  await page.getByTestId("edit-save").click();
  await expect.poll(() => transcript(page)).toHaveLength(4);
  const edited = await transcript(page);
  expect(edited[0]).toBe("user: turn one");
  expect(edited[2]).toBe("user: turn two, edited");
  expect(edited[3]).toContain("turn two, edited");
  expect(edited.join("\n")).not.toContain("turn three");
  expect(await users.count()).toBe(2);

  // The original conversation is still there, as a branch of its own.
  await page.getByTestId("show-history").click();
  await expect.poll(() => page.getByTestId("branch").count()).toBe(2);
  // Message counts appear once the older pages have streamed in (see chat.e2e.test.ts).
  await expect
    .poll(() => page.locator('[data-testid="checkpoint"][data-message-count="6"]').count())
    .toBeGreaterThan(0);
  await screenshot(page, "edited");

  // The edited message carries a switcher between its versions; switching continues on the other branch.
  await page.keyboard.press("Escape");
  const position = page.getByTestId("branch-position");
  await expect.poll(() => position.allTextContents()).toEqual(["2 / 2"]);
  expect(await page.getByTestId("branch-next").isDisabled()).toBe(true);
  await page.getByTestId("branch-previous").click();
  await expect.poll(() => transcript(page)).toHaveLength(6);
  expect((await transcript(page))[4]).toBe("user: turn three");
  await expect.poll(() => position.allTextContents()).toEqual(["1 / 2"]);
  // The focus stays in the switcher (‹ is disabled now: on ›), through the redraws of the switch.
  await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("branch-next");
  await screenshot(page, "branch-switched");
  await page.getByTestId("branch-next").click();
  await expect.poll(() => transcript(page)).toHaveLength(4);
  expect((await transcript(page))[2]).toBe("user: turn two, edited");
  await expect.poll(() => position.allTextContents()).toEqual(["2 / 2"]);

  // Editing the very first message forks before everything, and the thread's title (made from
  // that message) follows it, in the top bar and the thread list.
  const titles = async () => [
    await page.locator(".thread-heading").textContent(),
    await page.locator(".thread-item.current .thread-title").textContent(),
  ];
  expect(await titles()).toEqual(["turn one", "turn one"]);
  await page.getByTestId("edit").first().click();
  await page.getByTestId("edit-text").fill("a new start");
  await page.getByTestId("edit-save").click();
  await expect.poll(() => transcript(page)).toHaveLength(2);
  expect((await transcript(page))[0]).toBe("user: a new start");
  await expect.poll(titles).toEqual(["a new start", "a new start"]);
  await page.reload();
  await ready(page);
  await expect.poll(() => transcript(page)).toHaveLength(2);
  expect((await transcript(page))[0]).toBe("user: a new start");
  expect(await titles()).toEqual(["a new start", "a new start"]);
  // After a reload the switcher is read back from the saver: the older version is the edited branch.
  await expect.poll(() => position.allTextContents()).toEqual(["2 / 2"]);
  await page.getByTestId("branch-previous").click();
  await expect.poll(() => transcript(page)).toHaveLength(4);
  expect((await transcript(page))[2]).toBe("user: turn two, edited");
  // The title follows the branch on show; a name the user gave stays over edits.
  await expect.poll(titles).toEqual(["turn one", "turn one"]);
  await threadAction(page.locator(".thread-item.current"), "Rename");
  await page.getByRole("textbox", { name: "Thread title" }).fill("My own name");
  await page.getByRole("textbox", { name: "Thread title" }).press("Enter");
  await expect.poll(titles).toEqual(["My own name", "My own name"]);
  await page.getByTestId("branch-next").first().click();
  await expect.poll(() => transcript(page)).toHaveLength(2);
  expect(await titles()).toEqual(["My own name", "My own name"]);
});

test("switching versions keeps the switcher where the reader clicked it, in a conversation longer than the view", async () => {
  const page = await harness().thread();
  await seedTurns(page, "SWITCHED", ["the first question", ...[1, 2, 3].map((n) => `${longMessage(80)} filler ${n}`)]);
  // Edit the first message: a second version of the whole conversation, short.
  await page.getByTestId("edit").first().click();
  await page.getByTestId("edit-text").fill("the first question, asked again");
  await page.getByTestId("edit-save").click();
  await expect.poll(() => transcript(page)).toHaveLength(2);
  const switcher = page.getByTestId("branch-switcher");
  await switcher.waitFor();
  // Back to the long version, then down its log a little, and forward again from there.
  await page.getByTestId("branch-previous").click();
  await expect.poll(() => transcript(page)).toHaveLength(8);
  const log = page.locator(".messages");
  expect(await log.evaluate((el) => el.scrollHeight - el.clientHeight)).toBeGreaterThan(400);
  const inView = () =>
    switcher.evaluate((el) => {
      const box = el.getBoundingClientRect();
      const view = el.closest(".messages")!.getBoundingClientRect();
      return box.top >= view.top && box.bottom <= view.bottom;
    });
  await expect.poll(inView).toBe(true);
  const before = await switcher.evaluate((el) => el.getBoundingClientRect().top);
  await page.getByTestId("branch-next").click();
  await expect.poll(() => transcript(page)).toHaveLength(2);
  await page.getByTestId("branch-previous").click();
  await expect.poll(() => transcript(page)).toHaveLength(8);
  await expect.poll(() => page.getByTestId("branch-position").allTextContents()).toEqual(["1 / 2"]);
  // Not thrown to the end of the long version: the switcher is where it was, and the log is not at its end.
  await expect.poll(inView).toBe(true);
  expect(Math.abs((await switcher.evaluate((el) => el.getBoundingClientRect().top)) - before)).toBeLessThan(4);
  expect(await log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)).toBeGreaterThan(100);
});

test("a message being edited is still being edited after a reload, with what was typed; a cancelled one is not", async () => {
  const page = await harness().thread();
  // Both turns drawn first (seedTurns waits for them): an editor opened while an answer still streams
  // can be drawn again under the typing (a proof run under load read "turn oneturn one, rewritten…").
  await seedTurns(page, "REWRITTEN", ["turn one", "turn two"]);
  await expect.poll(() => transcript(page)).toHaveLength(4);
  const field = page.getByTestId("edit-text");
  await page.getByTestId("edit").nth(0).click();
  await field.fill("turn one, rewritten before the reload");
  await expect.poll(() => page.evaluate(() => Object.keys(sessionStorage).join())).toContain("edit:REWRITTEN");

  await page.reload();
  await ready(page);
  await expect.poll(() => field.count()).toBe(1);
  expect(await field.inputValue()).toBe("turn one, rewritten before the reload");
  // It is the first message's editor: sent, the conversation forks before it.
  await page.getByTestId("edit-save").click();
  await expect
    .poll(() => transcript(page))
    .toEqual([
      "user: turn one, rewritten before the reload",
      expect.stringContaining("turn one, rewritten before the reload"),
    ]);
  expect(await field.count()).toBe(0);

  // Opened and cancelled: a reload opens nothing.
  await page.getByTestId("edit").nth(0).click();
  await field.fill("given up");
  await page.keyboard.press("Escape");
  await page.reload();
  await ready(page);
  await expect.poll(() => transcript(page)).toHaveLength(2);
  expect(await field.count()).toBe(0);
});

test("an open message editor keeps its text and its place while an answer streams and another tab writes", async () => {
  const page = await harness().thread({ pace: "model" });
  await send(page, "turn one");
  await page.getByTestId("edit").nth(0).click();
  const field = page.getByTestId("edit-text");
  await field.fill("turn one, rewritten");
  // The very node: drawn again, it lost the typing that went on meanwhile (it read "turn oneturn one, …").
  await field.evaluate((el) => ((el as HTMLElement & { kept?: boolean }).kept = true));
  const same = () => field.evaluate((el) => (el as HTMLElement & { kept?: boolean }).kept === true);
  // An answer streams (its steps and its end redraw the log) while the editor is open and typed into.
  await submit(page, longMessage(120));
  await page.locator(".message.streaming").waitFor();
  await field.focus();
  await field.press("End");
  await page.keyboard.type(" while it streams", { delay: 40 });
  await expect.poll(() => assistants(page).count()).toBe(2);
  await expect.poll(() => page.getByTestId("stop").isVisible()).toBe(false);
  expect(await field.inputValue()).toBe("turn one, rewritten while it streams");
  expect(await same()).toBe(true);
  // Another tab answers on the thread: this one draws the new turn, the editor stays as it is.
  const other = await harness().page(new URL(page.url()).hash, { pace: "fast" });
  await ready(other);
  await send(other, "from the other tab");
  await expect.poll(() => transcript(page)).toContain("user: from the other tab");
  await expect.poll(() => assistants(page).count()).toBe(3);
  await page.keyboard.type(", and after");
  expect(await field.inputValue()).toBe("turn one, rewritten while it streams, and after");
  expect(await same()).toBe(true);
  await page.getByTestId("edit-save").click();
  await expect
    .poll(() => transcript(page))
    .toEqual(["user: turn one, rewritten while it streams, and after", expect.stringContaining("rewritten")]);
});
