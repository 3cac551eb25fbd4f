/**
 * Vite config of the demo (`npm run demo`, i.e. `vite demo`: Vite reads the
 * config file of its root folder). The demo imports the package from
 * `../src` directly, so edits to the library reload the page.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import { VitePWA } from "vite-plugin-pwa";
import { CSP_HEADER, CSP_META } from "./csp.js";
import { readmePage } from "./readme-page.js";

/** The Content-Security-Policy on every response (see csp.ts). */
const headers = { "Content-Security-Policy": CSP_HEADER };

export default defineConfig({
  server: { port: 5173, headers },
  preview: { headers },
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
  // The production build (`npm run demo:build`, served by `npm run demo:preview`)
  // gets a Workbox service worker that precaches the app, so it reloads with
  // the network off. The dev server has none (devOptions off): nothing stale
  // while editing.
  plugins: [
    // The package's README at /readme.html, where the About panel links.
    readmePage(),
    {
      name: "demo-csp-meta",
      // The policy in the page itself too, for any static host of demo/dist.
      transformIndexHtml: () => [
        {
          tag: "meta",
          attrs: { "http-equiv": "Content-Security-Policy", content: CSP_META },
          injectTo: "head-prepend",
        },
      ],
    },
    VitePWA({
      injectRegister: "script",
      registerType: "autoUpdate",
      // Installable: the plugin writes manifest.webmanifest, links it from index.html and
      // precaches it and its icons (demo/public/icons, drawn by scripts/demo-icons.mjs).
      manifest: {
        id: "./",
        name: "IndexedDB LangGraph chat",
        short_name: "LangGraph chat",
        description: "A LangGraph.js agent that runs in the browser and keeps its threads in IndexedDB.",
        start_url: "./",
        scope: "./",
        display: "standalone",
        background_color: "#f7f7f8",
        theme_color: "#1f6feb",
        icons: [
          { src: "icons/icon-192.png", sizes: "192x192", type: "image/png", purpose: "any" },
          { src: "icons/icon-512.png", sizes: "512x512", type: "image/png", purpose: "any" },
          { src: "icons/maskable-512.png", sizes: "512x512", type: "image/png", purpose: "maskable" },
        ],
      },
      workbox: {
        globPatterns: ["**/*.{js,css,html,svg,wasm}"],
        // The LangChain/LangGraph chunk is larger than Workbox's 2 MiB default.
        maximumFileSizeToCacheInBytes: 8 * 1024 * 1024,
        navigateFallback: "index.html",
        // Control the first page load too, not only the next one: it can go offline at once.
        clientsClaim: true,
      },
    }),
  ],
  // LangChain and LangGraph are most of the bundle (~360 kB gzipped).
  build: { target: "es2022", chunkSizeWarningLimit: 2000 },
});
