/**
 * Turns that don't go as planned: the reader scrolled up, Stop, Retry after a
 * reload mid-answer, a model error in words, an endpoint that cannot be
 * reached, Regenerate, and Edit (a fork of the checkpoint before the
 * message). The long turn that is measured is in turns.e2e.test.ts.
 */
import type { Page, Route } from "playwright";
import { expect, inject, test } from "vitest";
import {
  assistants,
  longMessage,
  ready,
  screenshot,
  seedTurns,
  send,
  setPace,
  submit,
  threadAction,
  transcript,
  useHarness,
} from "./support.js";

// Each test starts at a fresh thread of one kept page (one boot for the file, not one per test); the
// tests that point the app at a mock endpoint (a setting of the whole app) keep a page of their own.
const harness = useHarness({ keepPage: true });
const endpoint = useHarness({ keepPage: true });

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

test("a model error reads as a sentence, not JSON, with Retry", async () => {
  const baseURL = inject("baseURL");
  const h = endpoint();
  const page = await h.thread();
  let calls = 0;
  await page.route("**/mock-llm/v1/chat/completions", async (route: Route) => {
    calls += 1;
    if (calls === 1) {
      await route.fulfill({
        status: 401,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          error: {
            message: "Incorrect API key provided: sk-test.",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        }),
      });
    } else {
      await route.fulfill({
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: `data: ${JSON.stringify({ choices: [{ delta: { content: "Now it **works**." } }] })}\n\ndata: [DONE]\n\n`,
      });
    }
  });
  await page.getByTestId("settings").click();
  await page.getByRole("combobox", { name: "Provider" }).selectOption("openai");
  await page.getByRole("textbox", { name: "Base URL" }).fill(`${baseURL}mock-llm/v1`);
  await page.getByRole("textbox", { name: "Model" }).fill("test-model");
  await page.getByRole("button", { name: "Save model" }).click();
  await page.getByText("Saved.").waitFor();
  await page.keyboard.press("Escape");

  await submit(page, "hello endpoint");
  const status = page.getByTestId("turn-status");
  await status.waitFor();
  expect(await status.getAttribute("data-kind")).toBe("failed");
  const message = (await status.textContent()) ?? "";
  expect(message).toContain("Incorrect API key provided");
  expect(message).not.toContain("{");
  await screenshot(page, "failed");
  await page.reload();
  await ready(page);
  await status.waitFor();
  expect(await status.textContent()).toContain("Incorrect API key provided");
  await page.getByTestId("retry").click();
  await assistants(page).first().waitFor();
  expect(await assistants(page).first().locator("strong").textContent()).toBe("works");
  // The browser logs the 401 it was given, twice (before and after the reload): expected here, and only that.
  const expected = (line: string) => /status of 401/.test(line);
  expect(h.errors.filter(expected).length).toBeGreaterThan(0);
  h.errors.splice(0, h.errors.length, ...h.errors.filter((line) => !expected(line)));
});

test("an endpoint that cannot be reached says so in words, also after a reload", async () => {
  const h = endpoint();
  const page = await h.thread();
  await page.route("**/mock-llm/v1/chat/completions", (route: Route) => route.abort("connectionrefused"));
  await useEndpoint(page);
  await submit(page, "is anyone there?");
  const status = page.getByTestId("turn-status");
  await status.waitFor();
  expect(await status.getAttribute("data-kind")).toBe("failed");
  const reachable = /Could not reach the model endpoint/;
  expect(await status.textContent()).toMatch(reachable);
  await screenshot(page, "unreachable");
  await page.reload();
  await ready(page);
  await status.waitFor();
  expect(await status.textContent()).toMatch(reachable);
  expect(await status.textContent()).not.toContain("Failed to fetch");
  // The browser logs the refused request: expected here, and only that.
  const expected = (line: string) => /ERR_CONNECTION_REFUSED|ERR_FAILED/.test(line);
  h.errors.splice(0, h.errors.length, ...h.errors.filter((line) => !expected(line)));
});

/** Points the app at a mock OpenAI-compatible endpoint (a route: same origin, no network). */
async function useEndpoint(page: Page): Promise<void> {
  await page.getByTestId("settings").click();
  await page.getByRole("combobox", { name: "Provider" }).selectOption("openai");
  await page.getByRole("textbox", { name: "Base URL" }).fill(`${inject("baseURL")}mock-llm/v1`);
  await page.getByRole("textbox", { name: "Model" }).fill("test-model");
  await page.getByRole("button", { name: "Save model" }).click();
  await page.getByText("Saved.").waitFor();
  await page.keyboard.press("Escape");
}

test("Regenerate asks the model again for the last answer, on a new branch", async () => {
  const page = await endpoint().thread();
  let calls = 0;
  await page.route("**/mock-llm/v1/chat/completions", async (route: Route) => {
    calls += 1;
    // In Markdown, as models write: the chat shows "answer number 1", History's preview the same text.
    const content = `${calls === 2 ? "# Second\n\n" : ""}**answer** number \`${calls}\``;
    const body = `data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\ndata: [DONE]\n\n`;
    await route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body });
  });
  await ready(page);
  await useEndpoint(page);
  await send(page, "one");
  await send(page, "two");
  expect(await page.getByTestId("regenerate").count()).toBe(1);
  await page.getByTestId("regenerate").click();
  await expect
    .poll(() => transcript(page))
    .toEqual(["user: one", "assistant: answer number 1", "user: two", "assistant: answer number 3"]);
  expect(calls).toBe(3);
  await page.getByTestId("show-history").click();
  await expect.poll(() => page.getByTestId("branch").count()).toBe(2);
  // The first answer to "two" is kept on the other branch; the previews are text, without the Markdown.
  await expect.poll(() => page.locator("#history .answer", { hasText: "answer number 2" }).count()).toBe(1);
  expect(await page.locator("#history .answer").allTextContents()).toEqual([
    "answer number 3",
    "answer number 1",
    "Second answer number 2",
  ]);
  await page.keyboard.press("Escape");
});

test("Regenerate at the end of a long conversation follows the new answer to its end", async () => {
  const page = await endpoint().thread();
  let calls = 0;
  await page.route("**/mock-llm/v1/chat/completions", async (route: Route) => {
    calls += 1;
    // The regenerated answer is much longer than the one it replaces: it ends below the view.
    const content = calls === 3 ? `${longMessage(400)} the end` : `short answer ${calls}`;
    const body = `data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\ndata: [DONE]\n\n`;
    await route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body });
  });
  await ready(page);
  await useEndpoint(page);
  await send(page, `${longMessage(150)} first`);
  await send(page, `${longMessage(150)} second`);
  await page.getByTestId("regenerate").click();
  await expect.poll(() => assistants(page).last().textContent()).toContain("the end");
  const log = page.locator(".messages");
  await expect.poll(() => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)).toBeLessThan(50);
});

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
