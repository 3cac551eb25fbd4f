/**
 * The example app's Vite config. In a real app the package comes from
 * node_modules; here the aliases point at this repository's sources.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const source = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  resolve: { alias: { "langgraph-checkpoint-indexeddb": source("index.ts") } },
  cacheDir: "../../node_modules/.vite/example-playwright",
  // Pre-bundle up front: a dependency found late reloads the page mid-test.
  optimizeDeps: { include: ["@langchain/core/messages", "@langchain/langgraph/web"] },
  // The tests serve a production build (one script, not hundreds of modules per new context).
  build: { outDir: "../../test-results/example-playwright-dist", emptyOutDir: true, target: "es2022" },
  logLevel: "warn",
});
