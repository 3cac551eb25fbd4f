/**
 * Chatting: the conversation survives a reload, threads stay apart, and time
 * travel forks from an earlier checkpoint while keeping the original branch.
 */
import { expect, test } from "vitest";
import { longMessage, ready, screenshot, seedTurns, send, transcript, useHarness } from "./support.js";

const harness = useHarness();
/**
 * One booted page for the last three tests, each at a thread of its own (e2e/support.ts, `keepPage`). "two
 * threads stay apart", the first of them, counts and searches the whole thread list: it is the kept page's
 * first test, so the list holds its two threads only (after a failure the next test gets a fresh context).
 */
const kept = useHarness({ keepPage: true });

test("a conversation is still there after a reload; a half-typed message stays with its thread", async () => {
  const page = await harness().page();
  await ready(page);
  // A wide screen has room for the whole hint (phones get a shorter one: mobile.e2e.test.ts).
  expect(await page.getByTestId("composer").getAttribute("placeholder")).toBe(
    "Message the assistant… (Enter sends, Shift+Enter: new line)",
  );
  await send(page, "Hello there");
  await send(page, "Tell me about IndexedDB");
  const before = await transcript(page);
  expect(before).toHaveLength(4);
  expect(before[0]).toBe("user: Hello there");
  expect(before[3]).toContain("Tell me about IndexedDB");
  await expect.poll(() => page.getByTestId("thread").count()).toBe(1);
  // Each message says when it was written; the tab's title is the thread's.
  const times = await page
    .getByTestId("message-time")
    .evaluateAll((nodes) => nodes.map((n) => n.getAttribute("datetime")));
  expect(times).toHaveLength(4);
  for (const time of times) expect(Math.abs(Date.now() - Date.parse(time!))).toBeLessThan(120_000);
  await expect.poll(() => page.title()).toBe("Hello there · IndexedDB LangGraph chat");
  await screenshot(page, "chat");
  // A half-typed message survives the reload too.
  const composer = page.getByTestId("composer");
  await composer.fill("a thought I have not finished");

  await page.reload();
  await ready(page);
  await page.locator('[data-testid="message"]').nth(3).waitFor();
  expect(await transcript(page)).toEqual(before);
  await expect.poll(() => page.getByTestId("thread").first().textContent()).toContain("Hello there");
  await expect.poll(() => composer.inputValue()).toBe("a thought I have not finished");
  // Sent, it is no draft any more: after the next reload (below) this thread's composer is empty.
  await send(page, "a thought I have now finished");

  // Two more threads to type in: written as set-up, beta open.
  await seedTurns(page, "ALPHA", ["alpha"]);
  await seedTurns(page, "BETA", ["beta"]);
  await expect.poll(() => page.getByTestId("thread").count()).toBe(3);
  const open = async (title: string) => {
    await page.getByTestId("thread").filter({ hasText: title }).click();
    await expect.poll(() => page.title()).toContain(title);
  };
  // Typed in beta, then off to alpha: the text is beta's, so alpha's composer is empty, and beta has it back.
  await composer.fill("half a thought for beta");
  await open("alpha");
  await expect.poll(() => composer.inputValue()).toBe("");
  await composer.fill("half a thought for alpha");
  await open("beta");
  await expect.poll(() => composer.inputValue()).toBe("half a thought for beta");
  // Each kept across a reload, with its thread; the one sent is gone.
  await page.reload();
  await ready(page);
  await expect.poll(() => composer.inputValue()).toBe("half a thought for beta");
  await open("Hello there");
  await page.locator('[data-testid="message"]').nth(5).waitFor();
  expect(await composer.inputValue()).toBe("");
  await open("alpha");
  await expect.poll(() => composer.inputValue()).toBe("half a thought for alpha");
  // Sent, alpha's is gone; beta's stays.
  await send(page, "half a thought for alpha, finished");
  await open("beta");
  await expect.poll(() => composer.inputValue()).toBe("half a thought for beta");
  await open("alpha");
  await expect.poll(() => composer.inputValue()).toBe("");
  // The one draft of the tab that an earlier version kept is read still: it goes to the thread the tab opens.
  await page.evaluate(() => sessionStorage.setItem("langgraph-demo:draft", JSON.stringify({ text: "kept before" })));
  await page.reload();
  await ready(page);
  await expect.poll(() => composer.inputValue()).toBe("kept before");
  await open("beta");
  await expect.poll(() => composer.inputValue()).toBe("half a thought for beta");
});

test("two threads stay apart", async () => {
  const page = await kept().thread();
  await send(page, "alpha one");
  await send(page, "alpha two");
  await page.getByTestId("new-thread").click();
  await expect.poll(() => transcript(page)).toEqual([]);
  await send(page, "beta one");
  await expect.poll(() => page.getByTestId("thread").count()).toBe(2);

  await expect.poll(() => page.title()).toContain("beta one");

  // Pressed on alpha's row, then alpha touched (as the last write of a run in another tab touches it: it takes a
  // new time and goes to the top, beta below it, under the pointer), then released: the click opens alpha. A
  // sidebar that drew every row anew lost it, the press and the release landing on two elements; one that
  // moved rows under a press lost it too (or gave it to beta).
  const alphaRow = page.getByTestId("thread").filter({ hasText: "alpha one" });
  const alphaTime = () => alphaRow.locator("time").getAttribute("datetime");
  const alphaId = await alphaRow.getAttribute("data-thread-id");
  // The press must land on alpha's row. A run's own touch of its thread comes 100 ms after its last write (the
  // debounce in demo/src/app.ts), so on a loaded machine beta's could still move the rows between the hover (which finds
  // alpha's place) and the press: the press then fell on beta, and its release opened beta (seen once at load 16:
  // "2 messages where 4"). So the run ends first, and a press that fell elsewhere is released (opening the row it
  // fell on, beta, already open) and made again; the rows hold still from a press on, which is what is tested.
  await page.getByTestId("stop").waitFor({ state: "hidden" });
  await page.evaluate(() => {
    const w = window as { pressedThread?: string };
    addEventListener("pointerdown", (event) => {
      w.pressedThread = (event.target as Element).closest<HTMLElement>("[data-thread-id]")?.dataset.threadId;
    });
  });
  const pressedOn = () => page.evaluate(() => (window as { pressedThread?: string }).pressedThread);
  for (let tries = 0; ; tries++) {
    await alphaRow.hover();
    await page.mouse.down();
    if ((await pressedOn()) === alphaId) break;
    await page.mouse.up();
    expect(tries, "a press on alpha's row landed on another row three times").toBeLessThan(2);
  }
  const before = await alphaTime();
  await page.evaluate(`(async () => {
    const { DemoDB } = await import("/e2e/internals.js");
    const db = new DemoDB();
    await db.touch(${JSON.stringify(alphaId)}, undefined, Date.now() + 1000);
    db.close();
  })()`);
  await expect.poll(alphaTime).not.toBe(before);
  await page.mouse.up();
  await expect.poll(() => transcript(page)).toHaveLength(4);
  await expect.poll(() => page.title()).toContain("alpha one");
  // Released, the rows take their places: alpha, touched last, on top.
  await expect.poll(() => page.getByTestId("thread").first().textContent()).toContain("alpha one");

  const alpha = await transcript(page);
  expect(alpha.filter((line) => line.startsWith("user:"))).toEqual(["user: alpha one", "user: alpha two"]);
  expect(alpha.join("\n")).not.toContain("beta");

  // Search across threads, from the keyboard: a word of an answer finds its thread, a title finds its own.
  await page.keyboard.press("Control+k");
  const search = page.getByTestId("thread-search");
  expect(await search.evaluate((el) => el === document.activeElement)).toBe(true);
  expect(await search.getAttribute("placeholder")).toBe("Search threads (Ctrl+K)");
  await search.fill("two");
  await expect.poll(() => page.getByTestId("thread").allTextContents()).toEqual([expect.stringContaining("alpha")]);
  await search.fill("BETA");
  await expect.poll(() => page.getByTestId("thread").allTextContents()).toEqual([expect.stringContaining("beta")]);
  await search.press("Escape");
  await expect.poll(() => page.getByTestId("thread").count()).toBe(2);
  // Shift+Escape: back to the composer; Ctrl+Shift+O: a new chat.
  await page.keyboard.press("Shift+Escape");
  expect(await page.getByTestId("composer").evaluate((el) => el === document.activeElement)).toBe(true);
  await page.keyboard.press("Control+Shift+O");
  await expect.poll(() => transcript(page)).toEqual([]);

  await page.getByTestId("thread").filter({ hasText: "beta one" }).click();
  await expect.poll(() => transcript(page)).toHaveLength(2);
  const beta = await transcript(page);
  expect(beta[0]).toBe("user: beta one");
  expect(beta.join("\n")).not.toContain("alpha");

  // A long pasted message folds, with "Show more".
  await send(page, longMessage(400));
  const pasted = page.locator('[data-testid="message"][data-role="user"]').last();
  const clipped = () => pasted.evaluate((el) => el.scrollHeight > el.clientHeight + 1);
  // Polled: the log is drawn again once the answer's checkpoint lands, and a node read while it is
  // replaced measures 0 × 0.
  await expect.poll(clipped).toBe(true);
  // Folded to a few lines, not squashed to a sliver: the log is a flex column that overflows, and a
  // bubble that hides its overflow may otherwise shrink below its content (it once showed half a line).
  await expect
    .poll(() => pasted.evaluate((el) => el.clientHeight / parseFloat(getComputedStyle(el).fontSize)))
    .toBeGreaterThan(8);
  await page.getByTestId("show-more").click();
  await expect.poll(clipped).toBe(false);
  expect(await page.getByTestId("show-more").getAttribute("aria-expanded")).toBe("true");
});

test("fork from an earlier checkpoint: later turns leave the view, the old branch stays", async () => {
  const page = await kept().thread();
  await seedTurns(page, "FORKED", ["turn one", "turn two", "turn three"]);
  expect(await transcript(page)).toHaveLength(6);

  await page.getByTestId("show-history").click();
  const twoMessages = page.locator('[data-testid="checkpoint"][data-message-count="2"]');
  await twoMessages.first().waitFor();
  await expect
    .poll(() => page.locator('[data-testid="checkpoint"][data-message-count="6"]').count())
    .toBeGreaterThan(0);
  // A turn's "3 steps" looks like something that opens: a caret that turns when it does.
  const toggle = page.locator(".steps-toggle").first();
  const caret = () => toggle.evaluate((el) => getComputedStyle(el, "::before").content);
  expect(await caret()).toMatch(/^"▸"/);
  await toggle.click();
  await expect.poll(caret).toMatch(/^"▾"/);
  // One way of writing a moment, the locale's short time, in the chat and in History (its turns and their
  // steps) alike: the chat wrote "07:24 AM" and History "7:24:20 AM". A moment of another day (the test ran
  // across midnight) has the date before it.
  const times = await page.evaluate(() => {
    const today = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });
    const otherDay = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    const written = (date: Date) => (date.toDateString() === new Date().toDateString() ? today : otherDay).format(date);
    return [...document.querySelectorAll<HTMLTimeElement>("time:not(.thread-time)")].map((time) => ({
      inHistory: Boolean(time.closest("#history")),
      shown: time.textContent,
      written: time.dateTime && written(new Date(time.dateTime)),
    }));
  });
  expect(times.filter((time) => time.inHistory).length).toBeGreaterThanOrEqual(6);
  expect(times.filter((time) => !time.inHistory).length).toBe(6);
  for (const time of times) expect(time.shown).toBe(time.written);
  await toggle.click();
  await twoMessages.first().click();
  // The view shows the state at that checkpoint.
  await expect.poll(() => transcript(page)).toHaveLength(2);
  await screenshot(page, "history");
  // Read-only there, as its composer says: no Edit (sent, it hid the answer and ran nothing).
  const edits = page.getByTestId("edit").filter({ visible: true });
  expect(await edits.count()).toBe(0);

  await page.getByTestId("fork").click();
  await expect.poll(() => page.getByTestId("fork").count()).toBe(0);
  // Forked, the conversation goes on from there: its message can be edited again.
  await expect.poll(() => edits.count()).toBe(1);
  const forked = await transcript(page);
  expect(forked).toHaveLength(2);
  expect(forked[0]).toBe("user: turn one");
  expect(forked.join("\n")).not.toContain("turn two");

  // The original branch is still in the history, as a branch of its own.
  // Both branches are drawn before the older pages have streamed in, and a turn's message count is
  // known only once its chain is read: wait for the count, as a reader would.
  await expect.poll(() => page.getByTestId("branch").count()).toBe(2);
  await expect
    .poll(() => page.locator('[data-testid="checkpoint"][data-message-count="6"]').count())
    .toBeGreaterThan(0);

  // The conversation continues on the new branch.
  await send(page, "a different turn two");
  const branch = await transcript(page);
  expect(branch).toHaveLength(4);
  expect(branch[2]).toBe("user: a different turn two");
  await screenshot(page, "history-forked");

  // And a reload keeps the branch.
  await page.reload();
  await ready(page);
  await expect.poll(() => transcript(page)).toEqual(branch);
});

test("an edit near the top that leaves a short conversation offers no 'New messages' button", async () => {
  const page = await kept().thread();
  const filler = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");
  await seedTurns(page, "EDITEDSHORT", ["first question", ...[1, 2, 3].map((n) => `${filler} ${n}`)]);
  await expect.poll(() => page.getByTestId("stop").isHidden()).toBe(true);
  const log = page.locator(".messages");
  // The log overflows; the reader goes up to the first message and edits it.
  await expect.poll(() => log.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
  await page.getByTestId("edit").first().click();
  await page.getByTestId("edit-text").fill("first question, edited");
  await page.getByTestId("edit-save").click();
  await expect.poll(() => transcript(page)).toHaveLength(2);
  await expect.poll(() => page.getByTestId("stop").isHidden()).toBe(true);
  // Everything fits on screen now: there is nothing below to jump to.
  expect(await log.evaluate((el) => el.scrollHeight <= el.clientHeight)).toBe(true);
  // Let the view settle (the log follows new content at the next animation frame).
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  expect(await page.getByTestId("new-messages").isHidden()).toBe(true);
  await screenshot(page, "edited-short");
});
