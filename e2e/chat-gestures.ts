/**
 * The chat gestures of the end-to-end tests (e2e/support.ts re-exports
 * them): sending and waiting for replies, seeding turns through the demo's
 * Session, the sidebar's thread menu, the transcript, and screenshots.
 */
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Locator, Page } from "playwright";

const screenshotDir = fileURLToPath(new URL("./screenshots/", import.meta.url));

/** The assistant's messages of the page. */
export const assistants = (page: Page): Locator => page.locator('[data-testid="message"][data-role="assistant"]');

/** A message of `words` words, long enough that its answer streams for a while at the model's pace. */
export function longMessage(words: number): string {
  return Array.from({ length: words }, (_, i) => `word${i}`).join(" ");
}

/** Types a message and sends it with Enter, without waiting for anything. */
export async function submit(page: Page, text: string): Promise<void> {
  const composer = page.getByTestId("composer");
  await composer.fill(text);
  await composer.press("Enter");
}

/** Waits until the chat is ready for input. */
export async function ready(page: Page): Promise<void> {
  await page.getByTestId("composer").waitFor();
}

/** Types a message, sends it with Enter, and waits for the assistant's reply to it. */
export async function send(page: Page, text: string, options: { expectReply?: boolean } = {}): Promise<void> {
  const composer = page.getByTestId("composer");
  await composer.fill(text);
  await composer.press("Enter");
  await page.locator('[data-testid="message"][data-role="user"]', { hasText: text }).last().waitFor();
  if (!(options.expectReply ?? true)) return;
  // The reply is an assistant message after this user message. Counting the
  // assistant messages before sending raced a thread switch: right after
  // "New thread" the old thread's messages could still be counted, and the
  // wait was for one more reply than the new thread would ever hold.
  await page.waitForFunction(
    (sent) => {
      // Whitespace normalized as Playwright's `hasText` does (markdown collapses runs of spaces).
      const normal = (text: string) => text.replace(/\s+/g, " ").trim();
      const messages = [...document.querySelectorAll<HTMLElement>('[data-testid="message"]')];
      let mine = -1;
      messages.forEach((message, index) => {
        if (message.dataset.role === "user" && normal(message.textContent ?? "").includes(normal(sent))) mine = index;
      });
      return mine >= 0 && messages.slice(mine + 1).some((m) => m.dataset.role === "assistant" && m.checkVisibility());
    },
    text,
    { polling: 50 },
  );
}

/**
 * Writes the turns `texts` into thread `threadId` through the demo's own
 * Session (`send`, the path the composer's Enter takes; answered at the
 * page's pace), then opens that thread in `page` and waits until its turns
 * are drawn. For set-up turns a test is not about: each typed and answered
 * through the page costs a redraw per step, this writes them undrawn.
 */
export async function seedTurns(page: Page, threadId: string, texts: readonly string[]): Promise<void> {
  // A string, evaluated as written: the page's own module loader imports the app's modules
  // (built beside the app by e2e/global-setup.ts, from e2e/demo-internals.ts).
  await page.evaluate(`(async () => {
    const { Session, DemoDB, plainVault } = await import("/e2e/internals.js");
    const session = await Session.open(new DemoDB(), plainVault);
    try {
      for (const text of ${JSON.stringify(texts)}) await session.send(${JSON.stringify(threadId)}, text, () => undefined);
    } finally {
      await session.close();
    }
  })()`);
  await page.evaluate((id) => (location.hash = `#/thread/${id}`), threadId);
  // Drawn: every turn, the last one being the last seeded (not a thread shown before).
  await page.waitForFunction(
    ({ count, last }) => {
      const messages = [...document.querySelectorAll<HTMLElement>('[data-testid="message"]')];
      const users = messages.filter((message) => message.dataset.role === "user");
      return messages.length === count && !!users.at(-1)?.textContent?.replace(/\s+/g, " ").includes(last);
    },
    { count: texts.length * 2, last: texts.at(-1)?.replace(/\s+/g, " ").trim() ?? "" },
    { polling: 50 },
  );
}

/** An action of a sidebar thread's "⋯" menu. */
export type ThreadAction = "Rename" | "Instructions" | "Delete";

/**
 * Chooses `action` in the menu of the sidebar row `row` (a `.thread-item`
 * locator): hovers the row, opens its menu, then clicks the item.
 */
export async function threadAction(row: Locator, action: ThreadAction): Promise<void> {
  // As a mouse user does: where a pointer hovers, the row's "⋯" shows on hover.
  await row.hover();
  await row.getByTestId("thread-menu").click();
  await row.getByRole("menuitem", { name: action }).click();
}

/** The visible messages as `role: text`. */
export async function transcript(page: Page): Promise<string[]> {
  return page
    .locator('[data-testid="message"]')
    .evaluateAll((nodes) => nodes.map((node) => `${(node as HTMLElement).dataset.role}: ${node.textContent ?? ""}`));
}

/**
 * Whether {@link screenshot} writes its pictures: with `E2E_SCREENSHOTS=1`
 * only. No test reads them (they are for a person looking over the UI), and
 * each costs about 0.14 CPU-s of a phase bound by CPU (docs/testing.md).
 */
const screenshotsOn = process.env.E2E_SCREENSHOTS === "1";

/** Saves a picture of the page's view as `<name>.png` in the git-ignored `screenshots` folder beside this file, when {@link screenshotsOn}. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!screenshotsOn) return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: `${screenshotDir}${name}.png`, fullPage: false, animations: "disabled" });
}
