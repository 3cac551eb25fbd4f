/**
 * Vite config of the demo (`npm run demo`, i.e. `vite demo`: Vite reads the
 * config file of its root folder). The demo imports the package from
 * `../src` directly, so edits to the library reload the page.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  server: { port: 5173 },
  // The README's quick start (examples/quick-start.ts) imports the package by
  // its name; its end-to-end test loads it from this server. The demo itself
  // still imports the library only through src/lib.ts.
  resolve: { alias: { "langgraph-checkpoint-indexeddb": fileURLToPath(new URL("../src/index.ts", import.meta.url)) } },
  // Its own optimizer cache, apart from the library's Vitest runs.
  cacheDir: "../node_modules/.vite/demo",
  // Pre-bundle every dependency up front: a dependency discovered late makes
  // Vite reload the page, which would interrupt a first visit (and the e2e tests).
  optimizeDeps: {
    include: [
      "@langchain/core/messages",
      "@langchain/core/load",
      "@langchain/core/embeddings",
      "@langchain/langgraph/web",
      "@langchain/langgraph-checkpoint",
      "dexie",
      "idb",
      "msgpackr",
      "ulid",
    ],
  },
  // LangChain and LangGraph are most of the bundle (~360 kB gzipped).
  build: { target: "es2022", chunkSizeWarningLimit: 2000 },
});
