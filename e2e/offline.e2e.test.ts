/**
 * Offline after a reload: the production build (`npm run demo:build`,
 * served as `npm run demo:preview` serves it) registers a Workbox service
 * worker that precaches the app, so with the network off the page reloads,
 * shows the saved conversation, and the local model still answers.
 */
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright";
import { build, preview, type PreviewServer } from "vite";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  Harness,
  cspViolations,
  launchChromium,
  ready,
  recordCspViolations,
  screenshot,
  send,
  transcript,
} from "./support.js";

const root = fileURLToPath(new URL("../demo", import.meta.url));
let server: PreviewServer;
let browser: Browser;

beforeAll(async () => {
  await build({ root, configFile: `${root}/vite.config.ts`, logLevel: "warn" });
  server = await preview({
    root,
    configFile: `${root}/vite.config.ts`,
    logLevel: "warn",
    preview: { port: 0, host: "127.0.0.1" },
  });
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

test("the built demo reloads and answers with the network off", { timeout: 120_000 }, async () => {
  const url = server.resolvedUrls!.local[0]!;
  const harness = await new Harness(browser, url).open();
  await recordCspViolations(harness.context);
  try {
    // The preview server sends the Content-Security-Policy, and the built page carries it (demo/csp.ts).
    const response = await fetch(url);
    expect(response.headers.get("content-security-policy")).toMatch(/script-src 'self';.*worker-src 'self' blob:/);
    expect(await response.text()).toContain('http-equiv="Content-Security-Policy"');
    const page = await harness.page();
    await ready(page);
    // The service worker controls the page (it activates once its precache is complete, then claims the page).
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, undefined, { timeout: 30_000 });
    await send(page, "saved before going offline");

    await harness.context.setOffline(true);
    await page.reload();
    await ready(page);
    await expect.poll(() => transcript(page)).toHaveLength(2);
    await send(page, "written offline");
    expect(await transcript(page)).toHaveLength(4);
    await screenshot(page, "offline");
    // Nothing went to the network for it: the page came from the service worker.
    expect(await page.evaluate(() => navigator.serviceWorker.controller?.state)).toBe("activated");
    // The service worker's registration, precache and the offline reload ran under the policy.
    expect(await cspViolations(page)).toEqual([]);
  } finally {
    await harness.close();
  }
  expect(harness.errors).toEqual([]);
});
