/**
 * The README's quick start is examples/quick-start.ts, word for word (checked
 * here), and it runs in Chromium: built with the demo and loaded as a module, it
 * answers, and a second load (a reload) continues the same thread.
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { ready, useHarness } from "./support.js";

const harness = useHarness();
const example = fileURLToPath(new URL("../examples/quick-start.ts", import.meta.url));
const readme = fileURLToPath(new URL("../README.md", import.meta.url));

test("the README's quick start is examples/quick-start.ts", async () => {
  const [code, text] = await Promise.all([readFile(example, "utf8"), readFile(readme, "utf8")]);
  const section = text.slice(text.indexOf("## Quick start"));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(block).toBe(code);
});

test("the quick start runs in the browser and keeps the thread across a reload", async () => {
  const page = await harness().page();
  await ready(page);
  const logs: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "log") logs.push(message.text());
  });
  // Built beside the app as /e2e/quick-start.js (e2e/global-setup.ts); the module runs once per page load.
  const run = () => page.evaluate(`import("/e2e/quick-start.js")`);
  await run();
  await expect.poll(() => logs).toContain("2 You said: hi");
  await page.reload();
  await ready(page);
  await run();
  await expect.poll(() => logs).toContain("4 You said: hi");
});
