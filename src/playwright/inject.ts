/**
 * Calling the page API from Node: inject the script into the page's
 * document when it is not there yet (again after each navigation), run one
 * method through `page.evaluate`, and turn the browser's bare SecurityError
 * on a page without an origin into advice.
 */
import type { Page } from "playwright";
import { pageBundle } from "./bundle.js";
import { PAGE_API_KEY, type PageApi } from "./protocol.js";

/** A method of the page API and its arguments. */
export type PageCall<K extends keyof PageApi> = [method: K, ...args: Parameters<PageApi[K]>];

/**
 * Runs `api[method](...args)` in the page and returns its result.
 *
 * @param helper The public helper's name, for error messages.
 */
export async function callPage<K extends keyof PageApi>(
  page: Page,
  helper: string,
  ...[method, ...args]: PageCall<K>
): Promise<Awaited<ReturnType<PageApi[K]>>> {
  try {
    await ensurePageApi(page);
    return (await page.evaluate(
      async ([key, name, values]) => {
        const api = (globalThis as unknown as Record<string, Record<string, (...a: unknown[]) => unknown>>)[key]!;
        return api[name]!(...values);
      },
      [PAGE_API_KEY, method, args as unknown[]] as const,
    )) as Awaited<ReturnType<PageApi[K]>>;
  } catch (error) {
    throw explain(page, helper, error);
  }
}

/**
 * The failure every first use hits: a page that has not navigated anywhere
 * (about:blank) or an opaque origin has no IndexedDB, and the browser only
 * says SecurityError.
 */
function explain(page: Page, helper: string, error: unknown): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (/SecurityError|access to the Indexed Database API is denied|IndexedDB is not available/i.test(message)) {
    return new Error(
      `langgraph-checkpoint-indexeddb/playwright: ${helper} needs the page at your app's origin, where its IndexedDB lives, and the page is at ${JSON.stringify(page.url())}. Navigate there first, e.g. await page.goto("http://localhost:5173/").`,
      { cause: error },
    );
  }
  return error;
}

/**
 * Injects the page script unless this document already has it. The waits
 * call it before they start their clock: the first injection (a build, when
 * running from the sources) must not eat a wait's timeout.
 */
export async function ensurePageApi(page: Page): Promise<void> {
  const present = await page.evaluate(
    (key) => typeof (globalThis as Record<string, unknown>)[key] === "object",
    PAGE_API_KEY,
  );
  if (!present) await page.evaluate(`(() => {\n${await pageBundle()}\n})()`);
}
