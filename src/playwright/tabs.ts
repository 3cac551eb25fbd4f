/**
 * The cases this package exists for, from a test: a second tab of the app
 * on the same storage, and the network going away. Thin on purpose: the
 * browser context already shares IndexedDB, Web Locks and BroadcastChannel
 * between its pages, and `setOffline` already cuts the network; these add
 * the waits that make the next step of a test deterministic.
 */
import type { Page } from "playwright";

/**
 * A second tab of the app: a new page in `page`'s browser context (same
 * origin storage, run locks and cross-tab channels), loaded at `url`
 * (default: the page's current URL). Close it, or let the context's end do.
 *
 * @returns The new page, after its `load` event.
 */
export async function openTab(page: Page, url?: string): Promise<Page> {
  const target = url ?? page.url();
  if (!/^https?:/.test(new URL(target, "http://placeholder.invalid").protocol)) {
    throw new Error(
      `openTab: the page is at ${JSON.stringify(target)}; pass the app's URL (IndexedDB needs its origin).`,
    );
  }
  const tab = await page.context().newPage();
  await tab.goto(target);
  return tab;
}

/**
 * Takes the page's browser context offline (every tab of it), or back
 * online, and waits until the page itself reports it (`navigator.onLine`,
 * which changes with the `offline`/`online` event an app listens to).
 */
export async function setOffline(page: Page, offline: boolean, options: { timeout?: number } = {}): Promise<void> {
  await page.context().setOffline(offline);
  await page.waitForFunction((off) => navigator.onLine === !off, offline, { timeout: options.timeout ?? 5_000 });
}
