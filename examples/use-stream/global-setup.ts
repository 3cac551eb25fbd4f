/**
 * Builds the example once (its own Vite config: React, the service worker),
 * serves the build on a free loopback port, and hands the URL to the test
 * (`inject("baseURL")`). A built page is a few requests; the dev server's
 * hundreds of modules per page would be most of the test's time.
 */
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { build, preview, type PreviewServer } from "vite";

declare module "vitest" {
  export interface ProvidedContext {
    baseURL: string;
  }
}

const configFile = fileURLToPath(new URL("./vite.config.ts", import.meta.url));
let server: PreviewServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  // Vitest sets NODE_ENV=test, which Vite would honour: React's development build, Workbox's unminified one.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({ configFile, mode: "production" });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  server = await preview({ configFile, preview: { port: 0, strictPort: false, host: "127.0.0.1" } });
  project.provide("baseURL", server.resolvedUrls!.local[0]!);
}

export async function teardown(): Promise<void> {
  await server?.close();
}
