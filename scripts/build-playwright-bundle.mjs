#!/usr/bin/env node
// Build step for the `./playwright` entry: bundles the code that the helpers
// inject into pages (dist/playwright/page.js and what it imports) into one
// self-contained script, dist/playwright-page.iife.js, so an installed
// package needs neither Vite nor the sources at test time.
// Run after `tsc -p tsconfig.build.json` (it uses the compiled dist/playwright/bundle.js).
//
//   node scripts/build-playwright-bundle.mjs [distDir]     (default: dist)
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dist = resolve(process.argv[2] ?? "dist");
const { buildPageBundle, PAGE_BUNDLE_FILE } = await import(
  pathToFileURL(resolve(dist, "playwright", "bundle.js")).href
);
const code = await buildPageBundle();
await writeFile(resolve(dist, PAGE_BUNDLE_FILE), code);
console.log(`playwright: wrote ${PAGE_BUNDLE_FILE} (${Math.round(code.length / 1024)} KiB)`);
