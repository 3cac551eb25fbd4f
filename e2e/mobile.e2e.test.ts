/**
 * A phone-sized viewport: the chat fits the width, the sidebar opens from the
 * menu, and every control has an accessible name.
 */
import type { Locator, Page } from "playwright";
import { expect, test } from "vitest";
import { assistants, screenshot, seedTurns, send, threadAction, transcript, useHarness } from "./support.js";

// Each test starts at a fresh thread of one kept page (one boot for the file, not one per test).
const harness = useHarness({ viewport: { width: 390, height: 844 }, keepPage: true });

/** Controls without an accessible name (a cheap check, not a full audit). */
function unnamedControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>("button, input, textarea, select, [role=button]"))
      .filter((el) => el.getClientRects().length > 0)
      .filter((el) => {
        const labelled =
          el.getAttribute("aria-label") || el.getAttribute("aria-labelledby") || el.getAttribute("title");
        const labels = (el as HTMLInputElement).labels;
        const text = el.tagName === "BUTTON" ? el.textContent?.trim() : "";
        return !labelled && !(labels && labels.length > 0) && !text;
      })
      .map((el) => el.outerHTML.slice(0, 120)),
  );
}

async function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

/** Whether the composer's hint wraps past the box and is cut off (Chromium counts a placeholder in scrollHeight). */
function hintCut(page: Page): Promise<boolean> {
  return page.getByTestId("composer").evaluate((el) => el.scrollHeight > el.clientHeight + 1);
}

/**
 * At 320 px wide (a small phone) the composer's hint, here why it is
 * disabled, is not cut off (it was: "Read-only (older checkpoint)" lost its
 * second line); then back to 390 px, where the full hint, `full`, fits.
 */
async function hintFitsSmallPhone(page: Page, full: string): Promise<void> {
  const hint = () => page.getByTestId("composer").getAttribute("placeholder");
  expect(await hint()).toBe(full);
  await page.setViewportSize({ width: 320, height: 640 });
  await expect.poll(() => hintCut(page)).toBe(false);
  expect(await hint()).not.toBe(full);
  await page.setViewportSize({ width: 390, height: 844 });
  await expect.poll(hint).toBe(full);
}

/** Whether a field's placeholder is wider than the field's text box (it is cut off), in the field's own font. */
function placeholderCut(field: Locator): Promise<boolean> {
  return field.evaluate((el: HTMLInputElement) => {
    const style = getComputedStyle(el);
    const ruler = document.createElement("canvas").getContext("2d")!;
    ruler.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return ruler.measureText(el.placeholder).width > room;
  });
}

test("readable and usable on a phone", async () => {
  const page = await harness().thread();
  // Nothing opens the phone's keyboard unasked (the composer is not focused at load), and no hint names
  // a shortcut a phone has no keyboard for.
  expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? null)).not.toBe("composer");
  expect(await page.getByTestId("thread-search").getAttribute("placeholder")).toBe("Search threads");
  // The keyboard, once open, shrinks the page rather than covering the composer (no keyboard here to open).
  expect(await page.locator('meta[name="viewport"]').getAttribute("content")).toMatch(
    /(^|,)\s*interactive-widget=resizes-content\s*(,|$)/,
  );
  await send(page, "Hello from a phone, with a rather long message that has to wrap onto several lines");
  await send(page, "remember that my favourite colour is teal", { expectReply: false });
  await page.getByTestId("approval").waitFor();
  await hintFitsSmallPhone(page, "Approve or reject the memory first");
  // The reason field's hint too ("Why not? (the assistant reads th" at 320 px before).
  const reason = page.getByTestId("approval-reason");
  expect(await placeholderCut(reason)).toBe(false);
  await page.setViewportSize({ width: 320, height: 640 });
  await expect.poll(() => placeholderCut(reason)).toBe(false);
  await page.setViewportSize({ width: 390, height: 844 });
  await expect.poll(() => reason.getAttribute("placeholder")).toBe("Why not? (the assistant reads this)");
  expect(await fitsWidth(page)).toBe(true);
  // Nor taller: the top bar keeps its buttons on one line, none pushed below the screen.
  expect(await page.evaluate(() => document.documentElement.scrollHeight <= window.innerHeight)).toBe(true);
  expect(await unnamedControls(page)).toEqual([]);
  await screenshot(page, "mobile-chat");

  // The sidebar slides in from the menu button.
  await page.getByRole("button", { name: "Show threads" }).click();
  await page.getByTestId("new-thread").click();
  await expect.poll(() => transcript(page)).toEqual([]);
  await send(page, "second thread on the phone");
  await page.getByRole("button", { name: "Show threads" }).click();
  await page.getByTestId("thread").first().waitFor();
  await screenshot(page, "mobile-sidebar");
  // A row's actions are one "⋯" menu: the title has the rest of the row, shown whole when it fits.
  const row = page.locator(".thread-item", { hasText: "second thread on the phone" });
  const room = await row.evaluate((li) => {
    const title = li.querySelector<HTMLElement>(".thread-title")!;
    return {
      title: title.getBoundingClientRect().width,
      row: li.getBoundingClientRect().width,
      cut: title.scrollWidth > title.clientWidth,
    };
  });
  expect(room.cut).toBe(false);
  expect(room.row - room.title).toBeLessThan(70);
  // The menu by keyboard: opens on its first item, the arrows wrap, Escape gives the focus back and leaves the drawer open.
  const menuButton = row.getByTestId("thread-menu");
  const focusedName = () => page.evaluate(() => document.activeElement?.textContent ?? "");
  await menuButton.focus();
  await page.keyboard.press("Enter");
  expect(await menuButton.getAttribute("aria-expanded")).toBe("true");
  await expect.poll(focusedName).toBe("Rename");
  await page.keyboard.press("ArrowUp");
  expect(await focusedName()).toBe("Delete");
  await page.keyboard.press("Home");
  await page.keyboard.press("ArrowDown");
  expect(await focusedName()).toBe("Instructions");
  await page.keyboard.press("Escape");
  await expect.poll(() => row.getByRole("menu").isHidden()).toBe(true);
  expect(await menuButton.getAttribute("aria-expanded")).toBe("false");
  expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("thread-menu");
  expect(await page.locator("#sidebar").isVisible()).toBe(true);
  // Escape closes the drawer, and the focus goes back to the menu button.
  await page.keyboard.press("Escape");
  await expect.poll(() => page.locator("#sidebar").isVisible()).toBe(false);
  expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("toggle-sidebar");
  // History opened over the drawer takes its place: the drawer is not left underneath.
  await page.getByRole("button", { name: "Show threads" }).click();
  await page.getByTestId("show-history").click();
  await expect.poll(() => page.locator("#sidebar").isVisible()).toBe(false);
  await page.keyboard.press("Escape");
  await expect.poll(() => page.locator("#history").isVisible()).toBe(false);
  await page.getByRole("button", { name: "Show threads" }).click();
  await page.getByTestId("thread").filter({ hasText: "Hello from a phone" }).click();
  await page.getByTestId("approval").waitFor();

  // History covers the screen and closes with Escape.
  await page.getByTestId("show-history").click();
  await page.getByTestId("checkpoint").first().waitFor();
  expect(await fitsWidth(page)).toBe(true);
  expect(await unnamedControls(page)).toEqual([]);
  await screenshot(page, "mobile-history");
  await page.keyboard.press("Escape");
  await expect.poll(() => page.locator("#history").isVisible()).toBe(false);

  await page.getByTestId("settings").click();
  expect(await unnamedControls(page)).toEqual([]);
  await screenshot(page, "mobile-settings");
  // About's paths and names wrap between words, never inside one ("src/serde/encry" / "pted/").
  await page.getByTestId("about").scrollIntoViewIfNeeded();
  const splitWords = await page.getByTestId("about").evaluate((about) =>
    [...about.querySelectorAll("td code")].flatMap((code) => {
      const text = code.firstChild as Text;
      const split: string[] = [];
      for (const match of text.data.matchAll(/\S+/g)) {
        const range = document.createRange();
        range.setStart(text, match.index);
        range.setEnd(text, match.index + match[0].length);
        if (range.getClientRects().length > 1) split.push(match[0]);
      }
      return split;
    }),
  );
  expect(splitWords).toEqual([]);
  // Scrolled to About, the title's close button is still on screen (a phone has no Escape key), and it closes.
  const close = page.getByRole("button", { name: "Close settings" });
  const shown = await close.evaluate((button) => {
    const box = button.getBoundingClientRect();
    const dialog = button.closest("dialog")!.getBoundingClientRect();
    return (
      box.top >= dialog.top &&
      box.bottom <= dialog.bottom &&
      document.elementFromPoint(box.x + 2, box.y + 2) !== null &&
      button.contains(document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2))
    );
  });
  expect(shown).toBe(true);
  await screenshot(page, "mobile-settings-scrolled");
  await close.click();
  await expect.poll(() => page.locator("dialog.settings").evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);

  // Instructions chosen in the drawer: that thread opens and the drawer closes, so once the editor
  // is saved its note is on screen (the drawer used to stay over the chat).
  await page.getByRole("button", { name: "Show threads" }).click();
  await threadAction(page.locator(".thread-item", { hasText: "second thread on the phone" }), "Instructions");
  await page.getByTestId("instructions-input").fill("Answer in one line.");
  await page.getByTestId("instructions-save").click();
  await expect.poll(() => page.locator("#sidebar").isVisible()).toBe(false);
  await expect.poll(() => page.locator(".thread-heading").textContent()).toBe("second thread on the phone");
  await expect.poll(() => page.getByTestId("instructions-text").textContent()).toBe("Answer in one line.");
  expect(await page.getByTestId("instructions-note").isVisible()).toBe(true);
});

test("on a phone, choosing a checkpoint leaves Fork in reach", async () => {
  const page = await harness().thread();
  await seedTurns(page, "PHONEFORK", ["phone turn one", "phone turn two"]);
  await page.getByTestId("show-history").click();
  await page.locator('[data-testid="checkpoint"][data-message-count="2"]').first().click();
  // The panel steps aside and the selection stays: the banner with Fork is on screen.
  await expect.poll(() => page.locator("#history").isVisible()).toBe(false);
  await expect.poll(() => transcript(page)).toHaveLength(2);
  const fork = page.getByTestId("fork");
  expect(await fork.isVisible()).toBe(true);
  // The chosen row went away with the panel: the focus goes to what comes next, Fork.
  await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("fork");
  const box = (await fork.boundingBox())!;
  expect(box.y + box.height).toBeLessThanOrEqual(844);
  expect(box.height).toBeGreaterThanOrEqual(44);
  await screenshot(page, "mobile-viewing");
  await hintFitsSmallPhone(page, "Read-only (older checkpoint)");
  await fork.click();
  await expect.poll(() => page.getByTestId("fork").count()).toBe(0);
  // Fork does not open the phone's keyboard unasked, as the page load does not: the focus goes from the
  // button, now gone, to the conversation, which goes on from there, not to the composer.
  await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("role"))).toBe("log");
  await send(page, "phone turn two, again");
  expect(await transcript(page)).toHaveLength(4);
  await page.getByTestId("show-history").click();
  await expect.poll(() => page.getByTestId("branch").count()).toBe(2);
  await screenshot(page, "mobile-history-branches");
  await page.keyboard.press("Escape");
});

test("on a phone, Approve and Reject on an approval card do not open the keyboard", async () => {
  const page = await harness().thread();
  const focused = () => page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? null);
  const role = () => page.evaluate(() => document.activeElement?.getAttribute("role") ?? null);
  for (const [memory, button] of [
    ["my favourite colour is teal", "approve"],
    ["my favourite tree is the oak", "reject"],
  ] as const) {
    await send(page, `remember that ${memory}`, { expectReply: false });
    await page.getByTestId("approval").waitFor();
    const answers = await assistants(page).count();
    await page.getByTestId(button).click();
    await expect.poll(() => page.getByTestId("approval").count()).toBe(0);
    // The answer drawn (the run's end moves the focus too, if anything does): still not the composer.
    await expect.poll(() => assistants(page).count()).toBeGreaterThan(answers);
    await expect.poll(() => page.getByTestId("stop").isVisible()).toBe(false);
    expect(await focused()).not.toBe("composer");
    // The focus went from the button, now gone, to the conversation, as after Fork.
    expect(await role()).toBe("log");
  }
});

test("on a phone, a short thread title is shown whole in the top bar", async () => {
  const page = await harness().thread();
  const heading = page.locator(".thread-heading");
  const cut = () => heading.evaluate((el) => el.scrollWidth > el.clientWidth);
  expect(await heading.textContent()).toBe("New thread");
  expect(await cut()).toBe(false);
  await send(page, "Short title");
  await expect.poll(() => heading.textContent()).toBe("Short title");
  expect(await cut()).toBe(false);
  await screenshot(page, "mobile-title");
});

test("on a phone, the composer's hint and the Stop button are not cut off", async () => {
  // The answer must still be streaming for Stop to show.
  const page = await harness().thread({ pace: "model" });
  const composer = page.getByTestId("composer");
  const stop = page.getByTestId("stop");
  expect(await hintCut(page)).toBe(false);
  // A long answer streams for a while: Stop shows beside the composer.
  await composer.fill(Array.from({ length: 300 }, (_, i) => `word${i}`).join(" "));
  await composer.press("Enter");
  await stop.waitFor();
  expect(await stop.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(false);
  expect(await hintCut(page)).toBe(false);
  await screenshot(page, "mobile-streaming");
  await stop.click();
  await page.getByTestId("stopped-note").waitFor();
  // Retry on a stopped answer writes it again, whole, in its place.
  await page.getByTestId("retry").click();
  await expect.poll(() => page.getByTestId("stopped-note").count(), { timeout: 20_000 }).toBe(0);
  expect(await page.getByTestId("message").last().textContent()).toContain("word299");
});

test("on a tablet, History leaves the chat its room, the thread list collapses, and the last answer stays in view", async () => {
  const page = await harness().thread();
  await page.setViewportSize({ width: 820, height: 1180 });
  const turns = Array.from({ length: 8 }, (_, i) => `tablet turn ${i} ${"with a long line of words ".repeat(8)}`);
  await seedTurns(page, "TABLET", turns);
  const chat = page.locator(".chat");
  const log = page.locator(".messages");
  const gap = () => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  await expect.poll(gap).toBeLessThan(50);
  await page.getByTestId("show-history").click();
  await page.getByTestId("checkpoint").first().waitFor();
  expect((await chat.boundingBox())!.width).toBeGreaterThanOrEqual(440);
  expect(await page.locator("#sidebar").isVisible()).toBe(false);
  // The narrower log reflowed: the reader who was at the end is still there.
  await expect.poll(gap).toBeLessThan(50);
  await screenshot(page, "tablet-history");
  await page.keyboard.press("Escape");
  await expect.poll(() => page.locator("#sidebar").isVisible()).toBe(true);
  // The list can be collapsed by hand too.
  await page.getByTestId("toggle-sidebar").click();
  await expect.poll(() => page.locator("#sidebar").isVisible()).toBe(false);
  expect(await page.getByTestId("toggle-sidebar").getAttribute("aria-expanded")).toBe("false");
});
