/**
 * Installable as an app: the built page links a web app manifest whose
 * fields installing needs, its icons (192 and 512 px, and a maskable one)
 * load as PNGs of the sizes it states, and Chromium itself finds nothing
 * in the way of installing the page (DevTools' installability check).
 */
import { expect, test } from "vitest";
import { ready, useHarness } from "./support.js";

const harness = useHarness();

interface ManifestIcon {
  src: string;
  sizes: string;
  type: string;
  purpose?: string;
}

/** A PNG's width and height, from its header (the IHDR chunk follows the 8-byte signature). */
function pngSize(bytes: Buffer): string {
  expect(bytes.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
  expect(bytes.subarray(12, 16).toString("latin1")).toBe("IHDR");
  return `${bytes.readUInt32BE(16)}x${bytes.readUInt32BE(20)}`;
}

test("the page links a manifest with loadable icons, and Chromium finds it installable", async () => {
  const page = await harness().page();
  await ready(page);
  const href = await page.locator('link[rel="manifest"]').getAttribute("href");
  expect(href).toBeTruthy();
  const manifestURL = new URL(href!, page.url());
  const response = await page.request.get(manifestURL.href);
  expect(response.status()).toBe(200);
  const manifest = (await response.json()) as {
    name: string;
    short_name: string;
    start_url: string;
    display: string;
    icons: ManifestIcon[];
  };
  expect(manifest.name).toBeTruthy();
  expect(manifest.short_name.length).toBeLessThanOrEqual(15);
  expect(manifest.display).toBe("standalone");
  // The start page is the app itself (relative to the manifest, like the icons).
  expect(new URL(manifest.start_url, manifestURL).href).toBe(new URL("./", manifestURL).href);

  const loaded: string[] = [];
  for (const icon of manifest.icons) {
    const image = await page.request.get(new URL(icon.src, manifestURL).href);
    expect(image.status(), icon.src).toBe(200);
    expect(image.headers()["content-type"]).toMatch(/^image\/png/);
    expect(pngSize(await image.body()), icon.src).toBe(icon.sizes);
    loaded.push(`${icon.sizes} ${icon.purpose ?? "any"}`);
  }
  expect(loaded).toEqual(expect.arrayContaining(["192x192 any", "512x512 any", "512x512 maskable"]));

  // Chromium's own reading: the manifest parses without errors, and nothing stops installing.
  const cdp = await harness().context.newCDPSession(page);
  const parsed = (await cdp.send("Page.getAppManifest")) as { url: string; errors: { message: string }[] };
  expect(parsed.url).toBe(manifestURL.href);
  expect(parsed.errors).toEqual([]);
  const { installabilityErrors } = await cdp.send("Page.getInstallabilityErrors");
  expect(installabilityErrors).toEqual([]);
});
