#!/usr/bin/env node
// The layer, doc-path and JSDoc checks (scripts/check-layers.mjs, scripts/check-doc-paths.mjs,
// scripts/check-jsdoc.mjs) and their self-tests, in one Node process: what `npm run check:layers`
// and `npm run check:docs` run, as `npm test`'s static phase runs it. Each of the six loads
// TypeScript's compiler (about 1.2 CPU-s a load here); as six processes they loaded it six times.
// The self-tests (node:test) run in this process once the checks are done, and report as
// `node --test` does; a failing check or test fails the process.
//
//   node scripts/check-source.mjs
import { main as checkDocPaths } from "./check-doc-paths.mjs";
import { main as checkJsdoc } from "./check-jsdoc.mjs";
import { main as checkLayers } from "./check-layers.mjs";

checkLayers();
checkDocPaths();
checkJsdoc();
await import("./check-layers.test.mjs");
await import("./check-doc-paths.test.mjs");
await import("./check-jsdoc.test.mjs");
