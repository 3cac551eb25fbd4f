/**
 * What the end-to-end tests read or plant in the demo's page, beside the
 * gestures of e2e/chat-gestures.ts (e2e/support.ts re-exports both): locking from
 * Settings, raw edits of the demo's database, its Content-Security-Policy
 * violations, and plaintext anywhere in its IndexedDB.
 */
import type { BrowserContext, Page } from "playwright";

/**
 * Locks the app with `passphrase` from Settings (typed twice, as the form
 * asks) and waits until it is locked; the dialog stays open.
 */
export async function lockWith(page: Page, passphrase: string): Promise<void> {
  await page.getByTestId("settings").click();
  await page.getByTestId("passphrase").fill(passphrase);
  await page.getByTestId("passphrase-again").fill(passphrase);
  await page.getByTestId("lock").click();
  await page.getByTestId("new-passphrase").waitFor({ timeout: 30_000 });
}

/** Unlocks the app at its lock screen with `passphrase`. */
export async function unlockWith(page: Page, passphrase: string): Promise<void> {
  await page.getByTestId("unlock-passphrase").fill(passphrase);
  await page.getByTestId("unlock").click();
}

/**
 * Runs `edit` (a function body with `store` in scope) on an object store of
 * the demo's database with raw IndexedDB, as a file edit would. A string
 * evaluated by Playwright: the page's CSP rightly forbids `new Function`.
 */
export function editDemoDb(page: Page, store: "settings" | "threads", edit: string): Promise<unknown> {
  return page.evaluate(`(async () => {
    const db = await new Promise((resolve, reject) => {
      const request = indexedDB.open("langgraph-demo");
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const tx = db.transaction(${JSON.stringify(store)}, "readwrite");
    const store = tx.objectStore(${JSON.stringify(store)});
    const result = await (async () => { ${edit} })();
    await new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    db.close();
    return result;
  })()`);
}

/**
 * Records the page's Content-Security-Policy violations (every page of the
 * context, from its first script on); read them with {@link cspViolations}.
 */
export async function recordCspViolations(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const seen: string[] = [];
    (globalThis as { __cspViolations?: string[] }).__cspViolations = seen;
    document.addEventListener("securitypolicyviolation", (event) =>
      seen.push(
        `${event.effectiveDirective} blocked ${event.blockedURI || "(inline)"} at ${event.sourceFile}:${event.lineNumber}`,
      ),
    );
  });
}

/** The violations recorded so far in this page (and clears them with `clear`). */
export function cspViolations(page: Page, clear = false): Promise<string[]> {
  return page.evaluate((clear) => {
    const seen = (globalThis as { __cspViolations?: string[] }).__cspViolations ?? [];
    const copy = [...seen];
    if (clear) seen.length = 0;
    return copy;
  }, clear);
}

/**
 * Where `marker` occurs in plaintext in the page's IndexedDB: every database,
 * every object store, every key and value (strings, and bytes read as UTF-8
 * and as UTF-16).
 */
export function plaintextHits(page: Page, marker: string): Promise<string[]> {
  return page.evaluate(async (marker) => {
    const hits: string[] = [];
    const utf8 = new TextEncoder().encode(marker);
    const utf16 = new Uint8Array(marker.length * 2);
    for (let i = 0; i < marker.length; i++) utf16[i * 2] = marker.charCodeAt(i);
    const contains = (bytes: Uint8Array, needle: Uint8Array) => {
      outer: for (let i = 0; i + needle.length <= bytes.length; i++) {
        for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
        return true;
      }
      return false;
    };
    const seen = new Set<unknown>();
    const scan = (value: unknown, where: string): void => {
      if (typeof value === "string") {
        if (value.includes(marker)) hits.push(where);
        return;
      }
      if (typeof value !== "object" || value === null || seen.has(value)) return;
      seen.add(value);
      if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
        const bytes =
          value instanceof ArrayBuffer
            ? new Uint8Array(value)
            : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
        if (contains(bytes, utf8) || contains(bytes, utf16)) hits.push(where);
        return;
      }
      for (const [key, item] of value instanceof Map ? value.entries() : Object.entries(value)) {
        scan(key, where);
        scan(item, where);
      }
    };
    const request = <T>(r: IDBRequest<T>) =>
      new Promise<T>((resolve, reject) => {
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
    for (const info of await indexedDB.databases()) {
      const db = await request(indexedDB.open(info.name!));
      for (const name of Array.from(db.objectStoreNames)) {
        const store = db.transaction(name, "readonly").objectStore(name);
        const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
        scan(keys, `${info.name}/${name} (key)`);
        scan(values, `${info.name}/${name}`);
      }
      db.close();
    }
    return [...new Set(hits)];
  }, marker);
}
