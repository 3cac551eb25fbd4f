/**
 * The Content-Security-Policy (demo/csp.ts): the server sends it, the
 * page carries it, it is enforced (a remote image is refused), and the app
 * runs under it with no violation: a chat turn, an export, the package's
 * OPFS journal worker (a blob: worker). The built app with its service
 * worker is checked in offline.e2e.test.ts.
 */
import { expect, test } from "vitest";
import { cspViolations, ready, recordCspViolations, send, useHarness } from "./support.js";

const harness = useHarness();

test("the page runs under a strict CSP with no violation", async () => {
  await recordCspViolations(harness().context);
  const page = await harness().context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") harness().errors.push(`console: ${message.text()}`);
  });
  const response = await page.goto(harness().baseURL);
  await ready(page);

  const header = (await response!.allHeaders())["content-security-policy"] ?? "";
  const meta = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute("content");
  for (const policy of [header, meta ?? ""]) {
    expect(policy).toMatch(/script-src 'self'(;|$)/);
    expect(policy).not.toMatch(/unsafe-eval|unsafe-inline/);
    expect(policy).toContain("worker-src 'self' blob:");
  }
  expect(header).toContain("frame-ancestors 'none'");

  // It is enforced, and the listener sees it: a remote image (as a model's Markdown could ask for) is refused.
  await page.evaluate(() => {
    const img = document.createElement("img");
    img.src = "https://example.invalid/tracker.png";
    document.body.append(img);
  });
  // (Reported once per policy: the header's and the meta's.)
  await expect.poll(async () => (await cspViolations(page)).length).toBeGreaterThan(0);
  for (const violation of await cspViolations(page, true))
    expect(violation).toMatch(/^img-src blocked https:\/\/example\.invalid\//);
  // Chromium also logs the refusal as a console error: expected here, and only here.
  await expect.poll(() => harness().errors.length).toBeGreaterThan(0);
  expect(harness().errors.every((error) => /Content Security Policy/.test(error))).toBe(true);
  harness().errors.length = 0;

  // A chat turn (with its Markdown rendering and the store's search).
  await send(page, "hello, what can you do?");

  // Code: highlighted by a chunk loaded only now that a code block appears, with Copy on the block and on the
  // message (under the same policy: no eval, no inline style).
  const highlighter = () =>
    page.evaluate(
      () => performance.getEntriesByType("resource").filter((e) => /\/common-[\w-]+\.js$/.test(e.name)).length,
    );
  expect(await highlighter()).toBe(0);
  await harness().context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await send(page, "```js\nconst answer = 42; // the code\n```");
  const code = page.locator('[data-role="assistant"] pre code').last();
  await code.locator(".hljs-keyword").first().waitFor();
  expect(await code.locator(".hljs-keyword").first().textContent()).toBe("const");
  expect(await highlighter()).toBe(1);
  // Copy sits in a strip above the code, not over it: on a phone a long first line scrolled under it.
  const copyBox = (await page.getByTestId("copy-code").last().boundingBox())!;
  expect((await code.boundingBox())!.y).toBeGreaterThanOrEqual(copyBox.y + copyBox.height);
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
  await page.getByTestId("copy-code").last().click();
  await expect.poll(clipboard).toBe("const answer = 42; // the code\n");
  await page.getByTestId("copy").last().click();
  await expect.poll(clipboard).toContain("> ```js");

  // An export: the file is made and downloaded through a blob: link.
  await page.getByTestId("settings").click();
  const download = page.waitForEvent("download");
  await page
    .locator("table.storage tbody tr")
    .getByRole("button", { name: /^Export/ })
    .first()
    .click();
  expect(await (await download).path()).toBeTruthy();
  await page.keyboard.press("Escape");

  // The package's OPFS journal, as an app turns it on: its worker starts from a blob: URL.
  // (A string, so that Vitest leaves the page's dynamic import alone.)
  const journaled = (await page.evaluate(`(async () => {
    const lib = await import("/e2e/internals.js");
    const saver = new lib.IndexedDBSaver({ dbName: "csp-journal", journal: "opfs" });
    const checkpoint = {
      v: 4,
      id: "1f0c0a00-0000-6000-8000-000000000001",
      ts: new Date().toISOString(),
      channel_values: { note: "journaled" },
      channel_versions: { note: 1 },
      versions_seen: {},
    };
    const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
    await saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, { note: 1 });
    await saver.close();
    const sizes = [];
    const root = await navigator.storage.getDirectory();
    // The package's journal folder (src/journal/opfs-backend.ts JOURNAL_DIRECTORY).
    for await (const [name, handle] of await root.getDirectoryHandle("langgraph-checkpoint-indexeddb"))
      if (name.startsWith("csp-journal") && handle.kind === "file") sizes.push((await handle.getFile()).size);
    return sizes;
  })()`)) as number[];
  expect(journaled.some((size) => size > 0)).toBe(true);

  expect(await cspViolations(page)).toEqual([]);
});
