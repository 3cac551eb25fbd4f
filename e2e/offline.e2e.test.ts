/**
 * Offline after a reload: the production build (`npm run demo:build`,
 * served as `npm run demo:preview` serves it) registers a Workbox service
 * worker that precaches the app, so with the network off the page reloads,
 * shows the saved conversation, and the local model still answers; the
 * web app manifest and its icons are precached with it.
 */
import type { Browser } from "playwright";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
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

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

test("the built demo reloads and answers with the network off", { timeout: 120_000 }, async () => {
  // The build every e2e test uses (e2e/global-setup.ts), with its service worker let in.
  const url = inject("baseURL");
  const harness = await new Harness(browser, url).open({ serviceWorkers: "allow" });
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
    // What installing needs comes from the precache too: the manifest and each of its icons.
    const installFiles = await page.evaluate(async () => {
      const href = document.querySelector<HTMLLinkElement>('link[rel="manifest"]')!.href;
      const manifest = (await (await fetch(href)).json()) as { icons: { src: string }[] };
      const icons = manifest.icons.map((icon) => new URL(icon.src, href).href);
      return Promise.all([href, ...icons].map(async (url) => `${new URL(url).pathname} ${(await fetch(url)).status}`));
    });
    expect(installFiles).toEqual([
      "/manifest.webmanifest 200",
      "/icons/icon-192.png 200",
      "/icons/icon-512.png 200",
      "/icons/maskable-512.png 200",
    ]);
    // Nothing went to the network for it: the page came from the service worker.
    expect(await page.evaluate(() => navigator.serviceWorker.controller?.state)).toBe("activated");
    // The service worker's registration, precache and the offline reload ran under the policy.
    expect(await cspViolations(page)).toEqual([]);
  } finally {
    await harness.close();
  }
  expect(harness.errors).toEqual([]);
});
