/**
 * Settings: the storage view (bytes per thread), export of a thread to a
 * file and import back, deleting a thread, and an OpenAI-compatible endpoint
 * streamed over SSE (served here by a route, same origin, no network).
 */
import { existsSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Route } from "playwright";
import { expect, test } from "vitest";
import {
  MOCK_COMPLETIONS,
  editDemoDb,
  ready,
  screenshot,
  send,
  sse,
  transcript,
  useEndpoint,
  useHarness,
  threadAction,
} from "./support.js";

// Each test on empty storage, in the page the test before had (its renderer kept: e2e/support.ts, `cleanPage`).
const harness = useHarness({ cleanPage: true });

test("storage view, export, delete and import a thread; About names the package and where each feature lives in it", async () => {
  const page = await harness().page();
  await ready(page);
  // Nothing saved yet says so: the databases' format marks alone read as "Checkpoints: 29 B · memories: 52 B".
  await page.getByTestId("settings").click();
  await expect.poll(() => page.getByTestId("storage-totals").textContent()).toMatch(/^Nothing saved yet\b/);
  expect(await page.getByTestId("memory-bytes").textContent()).toBe("none yet");
  await page.keyboard.press("Escape");
  await send(page, "keep this one");
  await send(page, "second turn of the kept thread");
  const kept = await transcript(page);
  await page.getByTestId("new-thread").click();
  // The new thread's empty log first: `send` counts the answers already shown.
  await expect.poll(() => transcript(page)).toEqual([]);
  await send(page, "a short one");
  await expect.poll(() => page.getByTestId("thread").count()).toBe(2);

  await page.getByTestId("settings").click();
  const rows = page.locator("table.storage tbody tr");
  await expect.poll(() => page.getByTestId("thread-bytes").count()).toBe(2);
  const sizes = await page.getByTestId("thread-bytes").allTextContents();
  for (const size of sizes) expect(size).toMatch(/^[\d.]+ (B|KB|MB)$/);
  // Threads and no memory yet: the totals say so as the memory row does, not "memories: 52 B" (its format mark).
  expect(await page.getByTestId("storage-totals").textContent()).toMatch(
    /^Checkpoints: [\d.]+ (B|KB|MB) · memories: none yet · /,
  );
  // Asking for persistent storage answers in place (never blocking anything).
  await page.getByRole("button", { name: "Request persistent storage" }).click();
  await page.getByText(/Storage is persistent|declined/).waitFor();
  expect(sizes.some((size) => size !== "0 B")).toBe(true);
  // Unlocked, nothing is encrypted: no note that exports are not.
  expect(await page.getByTestId("export-note").count()).toBe(0);
  await screenshot(page, "settings");

  const download = page.waitForEvent("download");
  await rows
    .filter({ hasText: "keep this one" })
    .getByRole("button", { name: /^Export/ })
    .click();
  const file = await (await download).path();
  expect((await readFile(file)).subarray(1, 4).toString()).toBe("LGT");
  // An export that fails says so under the table of threads, not in the import's line under the file field.
  // (A string, so that Vitest leaves the page's dynamic import alone.)
  const restore = await page.evaluateHandle(`(async () => {
    const lib = await import("/e2e/internals.js");
    const list = lib.IndexedDBSaver.prototype.list;
    lib.IndexedDBSaver.prototype.list = async function* () { throw new Error("the disk is gone"); };
    return () => (lib.IndexedDBSaver.prototype.list = list);
  })()`);
  await rows
    .filter({ hasText: "keep this one" })
    .getByRole("button", { name: /^Export/ })
    .click();
  await expect.poll(() => page.getByTestId("export-status").textContent()).toContain("Could not export");
  await page.evaluate((undo) => (undo as () => void)(), restore);
  await page.keyboard.press("Escape");

  // Delete the thread, then bring it back from the file.
  const item = page.locator(".thread-item", { hasText: "keep this one" });
  await threadAction(item, "Delete");
  // Deleting asks once more.
  expect(await page.getByTestId("thread").count()).toBe(2);
  await item.getByRole("button", { name: /^Confirm: delete/ }).click();
  await expect.poll(() => page.getByTestId("thread").count()).toBe(1);
  await page.getByTestId("settings").click();
  // A file that is not an export: said in words, nothing imported.
  await page
    .locator("#import-file")
    .setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("just some notes") });
  const refused = page.getByText(/^Could not import: this file is not a conversation exported from this app/);
  await refused.waitFor();
  expect(await refused.textContent()).not.toMatch(/exportThread|langgraph-thread|serde/);
  expect(await page.getByTestId("thread").count()).toBe(1);
  await page.locator("#import-file").setInputFiles(file);
  await page.getByTestId("thread").filter({ hasText: "(imported)" }).waitFor();
  // The dialog closes by itself on the imported copy.
  await expect
    .poll(() => page.locator("dialog.settings").evaluate((dialog) => (dialog as HTMLDialogElement).open))
    .toBe(false);
  await expect.poll(() => transcript(page)).toEqual(kept);
  // The imported thread goes on.
  await send(page, "after import");
  expect(await transcript(page)).toHaveLength(kept.length + 2);

  // The same file again: the conversation is here already (gone on since). Said, nothing imported.
  // On a phone the file field is at the dialog's foot: the answer and its choices scroll into view.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByTestId("settings").click();
  await page.locator("#import-file").setInputFiles(file);
  await page.getByText(/^This conversation is already here: “keep this one/).waitFor();
  expect(await page.getByTestId("thread").count()).toBe(2);
  const inView = (name: string) =>
    page.getByRole("button", { name }).evaluate((button) => {
      const box = button.getBoundingClientRect();
      const dialog = button.closest("dialog")!.getBoundingClientRect();
      return box.top >= dialog.top && box.bottom <= Math.min(dialog.bottom, innerHeight);
    });
  await expect.poll(() => inView("Import a copy anyway"), { timeout: 15_000 }).toBe(true);
  expect(await inView("Open it")).toBe(true);
  // A copy only when asked for: then a third thread, open behind the closed dialog, as the file has it.
  await page.getByRole("button", { name: "Import a copy anyway" }).click();
  await expect.poll(() => page.getByTestId("thread").count()).toBe(3);
  await expect
    .poll(() => page.locator("dialog.settings").evaluate((dialog) => (dialog as HTMLDialogElement).open))
    .toBe(false);
  await expect.poll(() => transcript(page)).toEqual(kept);

  // About names the package and where each feature lives in it.
  await page.getByTestId("settings").click();
  const about = page.getByTestId("about");
  await about.scrollIntoViewIfNeeded();
  const link = about.getByRole("link", { name: "langgraph-checkpoint-indexeddb" });
  expect(await link.count()).toBe(1);
  // It leads to a page that exists: the package's README, carried by the demo.
  const readme = await page.request.get(new URL((await link.getAttribute("href"))!, page.url()).href);
  expect(readme.status()).toBe(200);
  expect(readme.headers()["content-type"]).toMatch(/^text\/html/);
  const readmeTitle = /^#\s+(.+)$/m.exec(await readFile(new URL("../README.md", import.meta.url), "utf8"))![1]!;
  expect(await readme.text()).toContain(`<h1>${readmeTitle}</h1>`);
  const code = await about.locator("tbody td code").allTextContents();
  expect(code.length).toBeGreaterThanOrEqual(8);
  for (const path of ["src/saver/", "src/store/", "src/runs/", "src/sync/"]) {
    expect(code.some((text) => text.startsWith(path))).toBe(true);
  }
  // Every path it names exists in the package, so the panel cannot drift from the code.
  const root = fileURLToPath(new URL("..", import.meta.url));
  for (const text of code) {
    for (const path of text.split(" — ")[0]!.split(", ")) expect(existsSync(join(root, path)), path).toBe(true);
  }
  // The sticky title covers the dialog's whole width: a focused field scrolled under it showed the sides of its
  // focus ring in the dialog's side padding, beside the title.
  const [header, box] = await page.evaluate(() => {
    const dialog = document.querySelector<HTMLElement>("dialog.settings")!;
    const title = dialog.querySelector("header")!.getBoundingClientRect();
    const inner = dialog.getBoundingClientRect();
    return [
      [title.left, title.right],
      [inner.left + dialog.clientLeft, inner.left + dialog.clientLeft + dialog.clientWidth],
    ];
  });
  expect(header).toEqual(box);
  // Two columns on a wide screen: a feature's last word stands clear of its code (they touched, and read as one
  // line: "Passphrase lock (AES-GCM, bound to src/serde/encrypted/ —").
  await page.setViewportSize({ width: 1280, height: 800 });
  const gaps = await about.locator("tbody tr").evaluateAll((rows) =>
    rows.map((row) => {
      const [feature, code] = [...row.querySelectorAll("td")];
      const text = document.createRange();
      text.selectNodeContents(feature!);
      const end = Math.max(...[...text.getClientRects()].map((rect) => rect.right));
      return code!.querySelector("code")!.getBoundingClientRect().left - end;
    }),
  );
  expect(Math.min(...gaps)).toBeGreaterThanOrEqual(12);
  await screenshot(page, "about");
});

test("an OpenAI-compatible endpoint, streamed, with tool calls", async () => {
  const requests: {
    auth?: string;
    body: { model: string; stream: boolean; messages: { role: string }[]; tools: unknown[] };
  }[] = [];
  const replies = [
    sse([
      { choices: [{ delta: { role: "assistant", content: "Hello " } }] },
      { choices: [{ delta: { content: "from the " } }] },
      { choices: [{ delta: { content: "endpoint." } }] },
    ]),
    sse([
      {
        choices: [
          {
            delta: {
              role: "assistant",
              tool_calls: [
                { index: 0, id: "call_1", type: "function", function: { name: "save_memory", arguments: "" } },
              ],
            },
          },
        ],
      },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"memory":"I like ' } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'jazz"}' } }] } }] },
    ]),
    sse([{ choices: [{ delta: { content: "Saved that you like jazz." } }] }]),
  ];
  const page = await harness().page();
  await page.route(MOCK_COMPLETIONS, async (route: Route) => {
    const request = route.request();
    requests.push({ auth: request.headers().authorization, body: request.postDataJSON() });
    await route.fulfill({
      status: 200,
      headers: { "content-type": "text/event-stream" },
      body: replies[requests.length - 1] ?? sse([]),
    });
  });
  await ready(page);
  await useEndpoint(page, "sk-test");

  await send(page, "hi endpoint");
  await expect.poll(() => transcript(page)).toEqual(["user: hi endpoint", "assistant: Hello from the endpoint."]);
  expect(requests[0]!.auth).toBe("Bearer sk-test");
  expect(requests[0]!.body.model).toBe("test-model");
  expect(requests[0]!.body.stream).toBe(true);
  expect(requests[0]!.body.tools.length).toBe(2);
  expect(requests[0]!.body.messages.map((m) => m.role)).toEqual(["system", "user"]);

  await send(page, "remember I like jazz", { expectReply: false });
  await page.getByTestId("approval").waitFor();
  // The streamed arguments reached the card: its editor holds the memory as the model wrote it.
  expect(await page.getByTestId("approval-args").inputValue()).toBe("I like jazz");
  await page.getByTestId("approve").click();
  await expect.poll(() => transcript(page)).toContain("assistant: Saved that you like jazz.");
  // The third request carried the tool call and its result.
  expect(requests[2]!.body.messages.map((m) => m.role)).toEqual([
    "system",
    "user",
    "assistant",
    "user",
    "assistant",
    "tool",
  ]);
});

test("a sync server that does not answer reads as such, not as the browser being offline", async () => {
  const page = await harness().page();
  await ready(page);
  await send(page, "a turn waiting to sync");
  await page.getByTestId("settings").click();
  // An address without its scheme is refused as typed, and not kept: the next start still opens the app.
  await page.getByTestId("sync-url").fill("localhost:8787");
  await page.getByTestId("sync-token").fill("any-token");
  await page.getByTestId("sync-save").click();
  await page.getByText(/^Could not sync: .*http\(s\)/).waitFor();
  await page.reload();
  await ready(page);
  await expect.poll(() => page.getByTestId("sync-status").textContent()).toBe("Sync off");
  // One an earlier version kept: the app starts with sync off and says why.
  await editDemoDb(
    page,
    "settings",
    `store.put({ key: "sync", value: ${JSON.stringify(JSON.stringify({ url: "localhost:8787", token: "t" }))} });`,
  );
  await page.reload();
  await ready(page);
  expect(await page.getByTestId("vault-problem").textContent()).toMatch(/sync settings.*http\(s\)/);
  await expect.poll(() => page.getByTestId("sync-status").textContent()).toBe("Sync off");
  await page.getByTestId("settings").click();
  // A plain-http server on another machine: the page's own policy forbids it, said as such (nothing is asked of it).
  await page.getByTestId("sync-url").fill("http://192.168.1.20:8787");
  await page.getByTestId("sync-token").fill("any-token");
  await page.getByTestId("sync-save").click();
  await page
    .getByText(/^Could not sync: This page may use plain http:\/\/ only for a server on this machine/)
    .waitFor();
  expect(harness().errors).toEqual([]);
  // A port just freed: nothing listens there, every request is refused while the page is online.
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  await page.getByTestId("sync-url").fill(`http://localhost:${port}`);
  await page.getByTestId("sync-token").fill("any-token");
  await page.getByTestId("sync-save").click();
  await page.getByText(/^Could not sync/).waitFor();
  // A browser hides a server that does not let this page in (CORS) as one that does not answer: both are named.
  const origin = new URL(harness().baseURL).origin;
  const said = page.getByTestId("sync-saved");
  expect(await said.textContent()).toContain(`SYNC_CORS_ORIGINS=${origin}`);
  // Said in words; the browser's "Failed to fetch" (and the request that failed) only on hover.
  expect(await said.textContent()).toMatch(/^Could not sync: the sync server could not be reached\. /);
  expect(await said.textContent()).not.toContain("Failed to fetch");
  expect(await said.getAttribute("title")).toMatch(/^Sync server unreachable \(GET \/hello\): Failed to fetch/);
  // On a phone the line wraps inside the dialog: the origin, one long word, ran past its edge, cut off.
  await page.setViewportSize({ width: 390, height: 844 });
  await expect.poll(() => page.getByTestId("sync-saved").evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
  await page.keyboard.press("Escape");
  const status = () => page.getByTestId("sync-status").textContent();
  await expect.poll(status).toMatch(/^Can't reach the sync server, \d+ changes? waiting$/);
  // Sync off again, so no retry logs a refused connection after the test.
  await page.getByTestId("settings").click();
  await page.getByTestId("sync-url").fill("");
  await page.getByTestId("sync-save").click();
  await expect.poll(status).toBe("Sync off");
  // The refused requests are the point here: Chromium logs each as a console error.
  expect(harness().errors.every((error) => /ERR_CONNECTION_REFUSED/.test(error))).toBe(true);
  harness().errors.length = 0;
});

test("two tabs importing the same file at once make one thread; the second says it is here already", async () => {
  const a = await harness().page();
  await ready(a);
  await send(a, "imported from two tabs");
  await a.getByTestId("settings").click();
  const download = a.waitForEvent("download");
  await a.getByRole("button", { name: /^Export/ }).click();
  const file = await (await download).path();
  await a.keyboard.press("Escape");
  const item = a.locator(".thread-item", { hasText: "imported from two tabs" });
  await threadAction(item, "Delete");
  await item.getByRole("button", { name: /^Confirm: delete/ }).click();
  await expect.poll(() => a.getByTestId("thread").count()).toBe(0);

  const b = await harness().page();
  await ready(b);
  // An import first looks for a thread holding the file's conversation: on a slow disk the look ends a while
  // after it read the threads, and both tabs looked before either wrote. (A string, so that Vitest leaves the import alone.)
  for (const page of [a, b]) {
    await page.evaluate(`(async () => {
      const lib = await import("/e2e/internals.js");
      const list = lib.IndexedDBSaver.prototype.listThreads;
      lib.IndexedDBSaver.prototype.listThreads = async function* (...args) {
        yield* list.apply(this, args);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      };
    })()`);
    await page.getByTestId("settings").click();
  }
  await Promise.all([a, b].map((page) => page.locator("#import-file").setInputFiles(file)));
  const here = /^This conversation is already here: “imported from two tabs/;
  // One tab imports; the other finds the copy it made, says so and imports nothing.
  await expect.poll(async () => (await a.getByText(here).count()) + (await b.getByText(here).count())).toBe(1);
  await expect.poll(() => a.getByTestId("thread").count()).toBe(1);
  expect(await b.getByTestId("thread").count()).toBe(1);
});
