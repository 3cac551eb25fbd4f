/**
 * Empties the demo's origin in a page kept from one test to the next (e2e/support.ts, `cleanPage`), so that
 * the next test starts on empty storage as in a fresh context, while its page keeps its renderer process:
 * a boot there costs about 0.65 CPU-s against 1.5 for a fresh context's first page (which starts a renderer
 * and compiles the app's 1.5 MB of scripts anew; docs/testing.md).
 */
import type { BrowserContext, Page } from "playwright";

/** Storage left in the origin after {@link emptyOrigin}: the harness is broken, not the app (the test fails). */
export class StorageLeftError extends Error {}

/** What is left in the origin's storage (all 0 once emptied). */
interface Left {
  databases: number;
  local: number;
  session: number;
  files: number;
}

/**
 * Takes `page` off the app to a document of its origin that does not start it (the README's stylesheet:
 * the app's database connections, locks and timers end with its document), deletes every kind of storage
 * of the origin through the DevTools protocol, clears the tab's `sessionStorage` itself, and fails unless
 * IndexedDB, both storages and the origin's private file system (the saver's wipe markers) are empty.
 */
export async function emptyOrigin(context: BrowserContext, page: Page, baseURL: string): Promise<void> {
  await page.goto(new URL("readme.css", baseURL).href);
  const cdp = await context.newCDPSession(page);
  try {
    await cdp.send("Storage.clearDataForOrigin", { origin: new URL(baseURL).origin, storageTypes: "all" });
  } finally {
    await cdp.detach();
  }
  const left: Left = await page.evaluate(async () => {
    sessionStorage.clear();
    const root = (await navigator.storage.getDirectory()) as FileSystemDirectoryHandle & {
      keys(): AsyncIterable<string>;
    };
    let files = 0;
    for await (const _ of root.keys()) files++;
    return {
      databases: (await indexedDB.databases()).length,
      local: localStorage.length,
      session: sessionStorage.length,
      files,
    };
  });
  if (Object.values(left).some((count) => count > 0))
    throw new StorageLeftError(`left after emptying the origin: ${JSON.stringify(left)}`);
}
