/**
 * `langgraph-checkpoint-indexeddb/playwright`: helpers for apps tested with
 * Playwright. Seed a page's IndexedDBSaver database from an exported thread
 * file, read a thread's latest state from the page, clear threads; wait on
 * real signals (`waitForThreadIdle`, `waitForCheckpoint`); the
 * `langgraphTest` fixture and its matchers; storage states built from
 * exports without a browser (`toStorageState`); apps that encrypt (every
 * helper takes `encryption`); a second tab (`openTab`), the network going
 * away (`setOffline`) and the app's SyncClient status (`trackSyncStatus`,
 * `readSyncStatus`, `waitForSyncStatus`).
 *
 * The page does not have to expose this library: the first call on a page
 * (and again after each navigation) injects a small self-contained script
 * with the saver's read and write paths and the importer (`page.evaluate`,
 * which works on pages with a strict Content-Security-Policy). IndexedDB
 * needs a real origin, so go to your app's URL first (not `about:blank`),
 * and use the app's `dbName`.
 *
 * This module runs in Node (the Playwright test process, or any script
 * driving a browser). The helpers need `playwright` only; `langgraphTest`
 * needs `@playwright/test`, and without it throws when used, naming it.
 * See docs/testing-apps.md.
 *
 * @example
 * ```ts
 * import { test, expect } from "@playwright/test";
 * import { clearThreads, readThreadState, seedThread } from "langgraph-checkpoint-indexeddb/playwright";
 *
 * test("shows a seeded conversation", async ({ page }) => {
 *   await page.goto("/");
 *   await clearThreads(page, { dbName: "my-app" });
 *   await seedThread(page, "fixtures/support-chat.lgthread", { dbName: "my-app", threadId: "t1" });
 *   await page.reload();
 *   await page.getByTestId("composer").fill("thanks!");
 *   await page.getByTestId("send").click();
 *   await expect.poll(async () => (await readThreadState(page, "t1", { dbName: "my-app" }))?.values.messages).toHaveLength(6);
 * });
 * ```
 * @module
 */
export {
  seedThread,
  readThreadState,
  clearThreads,
  exportThreadFromPage,
  type PageDatabaseOptions,
  type SeedThreadOptions,
  type ReadThreadStateOptions,
  type ClearThreadsOptions,
  type ThreadFileInput,
} from "./playwright/threads.js";
export {
  waitForThreadIdle,
  waitForCheckpoint,
  type WaitOptions,
  type WaitForThreadIdleOptions,
} from "./playwright/waits.js";
export type { PageThreadState, SeededThread } from "./playwright/protocol.js";
export type { AppEncryption } from "./playwright/encryption.js";
export { openTab, setOffline } from "./playwright/tabs.js";
export {
  trackSyncStatus,
  readSyncStatus,
  waitForSyncStatus,
  type PageSyncStatus,
  type WaitForSyncStatusOptions,
} from "./playwright/sync-status.js";
export {
  toStorageState,
  type ToStorageStateOptions,
  type LanggraphStorageState,
  type StorageStateDatabase,
} from "./playwright/storage-state.js";
export {
  langgraphTest,
  type LanggraphOptions,
  type LanggraphFixture,
  type LanggraphTestFixtures,
  type LanggraphTestType,
  type TestWithThreadMatchers,
  type ThreadsSnapshot,
} from "./playwright/fixture.js";
export {
  threadMatchers,
  type ThreadMatcherOptions,
  type ThreadMessagesOptions,
  type ExpectedMessage,
} from "./playwright/matchers.js";
