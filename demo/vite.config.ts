/**
 * Vite config of the demo (`npm run demo`, i.e. `vite demo`: Vite reads the
 * config file of its root folder). The demo imports the package from
 * `../src` directly, so edits to the library reload the page.
 */
import { defineConfig } from "vite";

export default defineConfig({
  server: { port: 5173 },
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
