/**
 * The useStream example's Vite config: React, and a Workbox service worker
 * (vite-plugin-pwa, as the demo uses) that precaches the build, so the app
 * reloads and runs with the network off after its first load. In a real app
 * the package comes from node_modules; here the aliases point at this
 * repository's sources.
 */
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";
import { VitePWA } from "vite-plugin-pwa";

const source = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  resolve: {
    alias: [
      { find: /^langgraph-checkpoint-indexeddb$/, replacement: source("index.ts") },
      { find: /^langgraph-checkpoint-indexeddb\/store$/, replacement: source("store.ts") },
      { find: /^langgraph-checkpoint-indexeddb\/agent-server$/, replacement: source("agent-server.ts") },
    ],
  },
  cacheDir: "../../node_modules/.vite/example-use-stream",
  plugins: [
    react(),
    VitePWA({
      injectRegister: "script",
      registerType: "autoUpdate",
      manifest: false,
      workbox: {
        globPatterns: ["**/*.{js,css,html}"],
        // LangChain and LangGraph make a chunk above Workbox's 2 MiB default.
        maximumFileSizeToCacheInBytes: 8 * 1024 * 1024,
        navigateFallback: "index.html",
        // Control the first load too, so the app works offline from then on.
        clientsClaim: true,
      },
    }),
  ],
  // The server's worker (`?server=worker`, `?server=shared`) is a module: it imports the package's chunks.
  worker: { format: "es" },
  build: { outDir: "../../test-results/example-use-stream-dist", emptyOutDir: true, target: "es2022" },
  logLevel: "warn",
});
