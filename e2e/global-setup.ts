/**
 * Starts the demo's Vite dev server on a free port, waits until a first page
 * load has pre-bundled every dependency (so no test sees Vite reload the page
 * to add one), and hands the URL to the tests (`inject("baseURL")`).
 */
import { createServer as createNetServer } from "node:net";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { createServer, type ViteDevServer } from "vite";
import { launchChromium } from "./support.js";

declare module "vitest" {
  export interface ProvidedContext {
    baseURL: string;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

let vite: ViteDevServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  const root = fileURLToPath(new URL("../demo", import.meta.url));
  const port = await freePort();
  vite = await createServer({
    root,
    configFile: `${root}/vite.config.ts`,
    logLevel: "warn",
    // No file watching or hot reload: an edit elsewhere in the tree must not
    // reload a page in the middle of a test.
    server: { port, strictPort: true, host: "127.0.0.1", hmr: false, watch: null },
  });
  await vite.listen();
  const baseURL = `http://127.0.0.1:${port}/`;

  // Warm up: one real page load, until the app is interactive.
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(baseURL);
    await page.getByTestId("composer").waitFor({ timeout: 60_000 });
  } finally {
    await browser.close();
  }
  project.provide("baseURL", baseURL);
}

export async function teardown(): Promise<void> {
  await vite?.close();
}
