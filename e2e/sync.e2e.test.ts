/**
 * The demo's "Sync between devices" setting: two browser contexts (two
 * profiles, so two separate IndexedDBs) sync through a real sync server on a
 * throwaway PostgreSQL. A thread started on A appears on B with its messages;
 * B's reply reaches A without a click, by live push: the demo's interval is
 * a minute, so only the long poll brings it within the wait below. The
 * sidebar's status line says what sync is doing.
 */
import type { Page } from "playwright";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { newUser, releasePostgres, startServer } from "../test/support/sync/harness.js";
import type { SyncServer } from "../src/sync-server.js";
import { ready, screenshot, send, transcript, useHarness } from "./support.js";

const harness = useHarness();
let server: SyncServer;
let serverUrl: string;

beforeAll(async () => {
  // The demo's origin may call it from the page (CORS), as SYNC_CORS_ORIGINS allows for `npm run sync-server`.
  ({ server, url: serverUrl } = await startServer({ corsOrigins: [new URL(inject("baseURL")).origin] }));
}, 120_000);
afterAll(async () => {
  await server?.close();
  // The test database was started for this file (the e2e configs provide none): stop it.
  await releasePostgres();
});

/** Opens Settings, sets the sync server and token, saves (which syncs once), and closes Settings. */
async function configureSync(page: Page, token: string): Promise<void> {
  await page.getByTestId("settings").click();
  await page.getByTestId("sync-url").fill(serverUrl);
  await page.getByTestId("sync-token").fill(token);
  await page.getByTestId("sync-save").click();
  await expect.poll(() => page.getByTestId("sync-saved").textContent(), { timeout: 30_000 }).toBe("Synced.");
  await page.keyboard.press("Escape");
}

test("two profiles sync a thread both ways through the sync server", async () => {
  const { token } = newUser("demo");
  const a = await harness().page("?pace=0");
  await ready(a);
  await expect.poll(() => a.getByTestId("sync-status").textContent()).toBe("Sync off");
  await send(a, "written on device A");
  await configureSync(a, token);
  await expect.poll(() => a.getByTestId("sync-status").textContent(), { timeout: 30_000 }).toBe("Synced");

  // Device B: another browser context, i.e. another profile with its own IndexedDB.
  const other = await harness().browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const b = await other.newPage();
    b.on("pageerror", (error) => harness().errors.push(`pageerror (B): ${error.message}`));
    await b.goto(new URL("?pace=0", harness().baseURL).href);
    await ready(b);
    await configureSync(b, token);
    const thread = b.getByTestId("thread").filter({ hasText: "written on device A" });
    await thread.waitFor({ timeout: 30_000 });
    await thread.click();
    await expect.poll(() => transcript(b), { timeout: 30_000 }).toHaveLength(2);
    expect((await transcript(b))[0]).toBe("user: written on device A");
    await screenshot(b, "sync-device-b");

    // B answers on the same thread; A's open long poll brings it, with nothing clicked on A.
    await send(b, "and B replies");
    await expect.poll(() => transcript(a), { timeout: 10_000, interval: 100 }).toHaveLength(4);
    expect((await transcript(a))[2]).toBe("user: and B replies");
    expect(await transcript(a)).toEqual(await transcript(b));
  } finally {
    await other.close();
  }
}, 180_000);
