/**
 * The approval card asks through interruptWith (a question inside the tools
 * node, answered by its id: Command({ resume: { [id]: answer } })): approve
 * with the memory edited, reject with a reason the assistant reads; the
 * question survives a reload, shows in a second tab, and leaves both once
 * one tab answers it.
 */
import type { Page } from "playwright";
import { expect, test } from "vitest";
import { lockWith, ready, send, useHarness } from "./support.js";

const harness = useHarness();
/**
 * One booted page for the tests that start from a thread of their own (e2e/support.ts, `keepPage`): the
 * memories other tests saved are there, and each such test checks only its own (a cat, a wren, a pin never
 * saved). The first test (pages of the default thread, a closed page) and the lock's keep fresh contexts.
 */
const kept = useHarness({ keepPage: true });

const lastAssistant = async (page: Page): Promise<string> =>
  (await page.locator('[data-testid="message"][data-role="assistant"]').last().textContent()) ?? "";

test("an edited memory is saved as edited, across a reload, a closed page and in two tabs", async () => {
  const first = await harness().page();
  await ready(first);
  await send(first, "remember that my favourite tree is the oak", { expectReply: false });
  await first.getByTestId("approval").waitFor();
  // The card stands right under the question it answers, the log's last line (the note of the call), not at
  // the page's foot with the log's empty room between them (334 px of it on a 1280 × 800 page).
  const gap = () =>
    first.evaluate(() => {
      const question = document.querySelector('[role="log"]')!.lastElementChild!.getBoundingClientRect();
      return document.querySelector('[data-testid="approval"]')!.getBoundingClientRect().top - question.bottom;
    });
  await expect.poll(gap).toBeLessThan(40);
  expect(await gap()).toBeGreaterThanOrEqual(0);
  // The card shows the memory once, in its editor, as it will be saved: no second wording beside it.
  expect(await first.getByTestId("approval-args").inputValue()).toBe("my favourite tree is the oak");
  expect(await first.getByTestId("approval").innerText()).not.toContain("oak");
  // The note of the call above the card quotes the same words, not a rewording ("your …").
  expect(await first.getByTestId("tool-call").textContent()).toContain("“my favourite tree is the oak”");
  await first.reload();
  await ready(first);
  await first.getByTestId("approval-args").waitFor();
  // The page closes with the question pending; a new page finds it and answers it.
  await first.close();
  const page = await harness().page();
  await ready(page);
  const editor = page.getByTestId("approval-args");
  await editor.waitFor();
  expect(await editor.inputValue()).toContain("oak");

  // A second tab of the same thread sees the question.
  const other = await harness().page();
  await ready(other);
  await other.getByTestId("approval").waitFor();

  // Emptied, the memory cannot be approved (it used to save the proposal, the text just deleted).
  await editor.fill("   ");
  expect(await page.getByTestId("approve").isDisabled()).toBe(true);
  await editor.fill("my favourite tree is the birch");
  expect(await page.getByTestId("approve").isDisabled()).toBe(false);
  await page.getByTestId("approve").click();
  await expect.poll(() => lastAssistant(page)).toContain("birch");
  expect(await lastAssistant(page)).not.toContain("oak");
  // Answered once: the card leaves both tabs, and the other tab shows the one answer.
  await expect.poll(() => other.getByTestId("approval").count()).toBe(0);
  await expect.poll(() => lastAssistant(other)).toContain("birch");
  const replies = await page.locator('[data-testid="message"][data-role="assistant"]').allTextContents();
  expect(replies.filter((text) => text.includes("birch"))).toHaveLength(1);

  await send(page, "what do you remember about me?");
  expect(await lastAssistant(page)).toContain("birch");
});

test("a rejection's reason reaches the assistant, and nothing is saved", async () => {
  const page = await kept().thread();
  await send(page, "remember that my pin is 1234", { expectReply: false });
  await page.getByTestId("approval-reason").fill("that is a secret");
  await page.getByTestId("reject").click();
  await expect.poll(() => lastAssistant(page)).toContain("you said: that is a secret");
  await send(page, "what do you remember about me?");
  expect(await lastAssistant(page)).not.toContain("1234");
});

test("Regenerate after an approved memory rewrites the answer only; the same memory is saved once", async () => {
  const page = await kept().thread();
  await send(page, "remember that I have two cats", { expectReply: false });
  await page.getByTestId("approve").click();
  await expect.poll(() => lastAssistant(page)).toContain("remember that you have two cats");
  // Done: the note says what the assistant did, in the past.
  const call = page.getByTestId("tool-call");
  expect(await call.textContent()).toContain("Asked to save a memory");
  expect(await call.getAttribute("data-done")).toBe("true");

  await page.getByTestId("regenerate").click();
  // A new version of the answer (a fork before the model's last step), without the question again.
  await expect.poll(() => page.getByTestId("branch-position").allTextContents()).toEqual(["2 / 2"]);
  expect(await page.getByTestId("approval").count()).toBe(0);
  expect(await page.getByTestId("message").count()).toBe(2);

  // Said again and approved: already known, not saved twice.
  await send(page, "remember that I have two cats", { expectReply: false });
  await page.getByTestId("approve").click();
  await expect.poll(() => lastAssistant(page)).toContain("already remember");
  await send(page, "what do you remember about me?");
  expect((await lastAssistant(page)).match(/two cats/g)).toHaveLength(1);
});

test("what was typed in the approval card survives a reload, sealed when locked, and goes once answered", async () => {
  const page = await harness().page();
  await ready(page);
  const editor = page.getByTestId("approval-args");
  const storage = () => page.evaluate(() => JSON.stringify(sessionStorage));
  // Typed unlocked in one thread's card, then in another's: kept as typed while nothing is encrypted.
  await send(page, "remember that my favourite mountain is Mont Blanc", { expectReply: false });
  await editor.fill("my favourite mountain is the Matterhorn, marker-card-first");
  await page.getByTestId("new-thread").click();
  await send(page, "remember that my favourite river is the Loire", { expectReply: false });
  await editor.fill("my favourite river is the Rhône, marker-card-edit");
  await page.getByTestId("approval-reason").fill("maybe later, marker-card-reason");
  await expect.poll(storage).toContain("marker-card-reason");
  expect(await storage()).toContain("marker-card-first");
  // Locked: both cards' edits are sealed again, neither is left in the tab's storage as typed.
  await lockWith(page, "a passphrase for the card");
  await page.keyboard.press("Escape");
  await expect.poll(storage).not.toContain("marker-card");

  await page.reload();
  await page.getByTestId("unlock-passphrase").fill("a passphrase for the card");
  await page.getByTestId("unlock-passphrase").press("Enter");
  await ready(page);
  await expect.poll(() => editor.inputValue()).toBe("my favourite river is the Rhône, marker-card-edit");
  expect(await page.getByTestId("approval-reason").inputValue()).toBe("maybe later, marker-card-reason");

  await page.getByTestId("approve").click();
  await expect.poll(() => lastAssistant(page)).toContain("Rhône");
  // Answered: nothing of that card is kept, and the next question's card starts from its own proposal.
  await send(page, "remember that my favourite lake is Geneva", { expectReply: false });
  await expect.poll(() => editor.inputValue()).toBe("my favourite lake is Geneva");
  expect(await page.getByTestId("approval-reason").inputValue()).toBe("");
  // The other thread's card is as it was left.
  await page.getByTestId("thread").filter({ hasText: "mountain" }).click();
  await expect.poll(() => editor.inputValue()).toBe("my favourite mountain is the Matterhorn, marker-card-first");
});

test("History says a question is awaiting approval only where it still is, not on one answered since", async () => {
  const page = await kept().thread();
  await send(page, "remember that my favourite bird is the wren", { expectReply: false });
  await page.getByTestId("approval").waitFor();
  await page.getByTestId("show-history").click();
  const panel = page.locator("aside.history");
  // Paused: the turn's row says so.
  await expect.poll(() => panel.getByText("paused: awaiting approval").count()).toBe(1);
  await page.getByTestId("approve").click();
  await expect.poll(() => lastAssistant(page)).toContain("wren");
  // Answered: the step that asked says it asked; nothing in the panel is awaiting anything.
  await expect.poll(() => panel.locator(".turn > .checkpoint .question").first().textContent()).toContain("wren");
  await panel.locator(".steps-toggle").first().click();
  await expect.poll(() => panel.locator(".steps .checkpoint").count()).toBeGreaterThan(3);
  expect(await panel.getByText("awaiting approval").count()).toBe(0);
  expect(await panel.getByText("asked for approval").count()).toBe(1);
  // Closed, so that the next test takes the kept page as it is (an open History would boot another).
  await page.keyboard.press("Escape");
  await panel.waitFor({ state: "hidden" });
});

test("another thread's card is drawn afresh: what was typed in one thread's card never shows in another's", async () => {
  const page = await kept().thread();
  // Two threads paused as the earlier demo paused them (before the tools step, no question id): both cards
  // are for "no question", the case where the card on show was kept across draws.
  await page.evaluate(`(async () => {
    const { Session, DemoDB, plainVault } = await import("/e2e/internals.js");
    const session = await Session.open(new DemoDB(), plainVault);
    try {
      for (const [id, text] of [["cardA", "remember that my favourite tree is the oak"], ["cardB", "remember that my favourite river is the Loire"]])
        await session.agent.invoke({ messages: [{ role: "user", content: text }] }, { ...session.config(id), interruptBefore: ["tools"] });
    } finally {
      await session.close();
    }
  })()`);
  const editor = page.getByTestId("approval-args");
  const open = (id: string) => page.evaluate((thread) => (location.hash = `#/thread/${thread}`), id);
  await open("cardA");
  await expect.poll(() => editor.inputValue()).toBe("my favourite tree is the oak");
  await editor.fill("my favourite tree is the birch, marker-thread-a");
  await open("cardB");
  await expect.poll(() => page.getByTestId("message").last().textContent()).toContain("Loire");
  await expect.poll(() => editor.inputValue()).toBe("my favourite river is the Loire");
  // The first thread's card is as it was left there.
  await open("cardA");
  await expect.poll(() => editor.inputValue()).toBe("my favourite tree is the birch, marker-thread-a");

  // The user goes on typing in it as another writer adds a call before the one typed in: the card drawn
  // again keeps the typing, the focus and the caret with that call's editor, now the second.
  await editor.click();
  await page.keyboard.press("Control+End");
  await page.evaluate(`(async () => {
    const { Session, DemoDB, plainVault } = await import("/e2e/internals.js");
    const session = await Session.open(new DemoDB(), plainVault);
    try {
      const asked = (await session.state("cardA")).values.messages.at(-1);
      const pin = { id: "call-pin", name: "save_memory", args: { memory: "my pin is 1234" }, type: "tool_call" };
      const message = { role: "assistant", id: asked.id, content: asked.content, tool_calls: [pin, ...asked.tool_calls] };
      await session.agent.updateState(session.config("cardA"), { messages: [message] }, "agent");
    } finally {
      await session.close();
    }
  })()`);
  await expect.poll(() => editor.count()).toBe(2);
  expect(await editor.evaluateAll((fields) => fields.map((field) => (field as HTMLTextAreaElement).value))).toEqual([
    "my pin is 1234",
    "my favourite tree is the birch, marker-thread-a",
  ]);
  await page.keyboard.type(", still typing");
  expect(await editor.nth(1).inputValue()).toBe("my favourite tree is the birch, marker-thread-a, still typing");
  expect(await editor.nth(0).inputValue()).toBe("my pin is 1234");
});
