#!/usr/bin/env node
// The layer, doc-path and JSDoc checks (scripts/check-layers.mjs, scripts/check-doc-paths.mjs,
// scripts/check-jsdoc.mjs) and their self-tests, in one Node process: what `npm run check:layers`
// and `npm run check:docs` run, as `npm test`'s static phase runs it. Each of the six loads
// TypeScript's compiler (about 1.2 CPU-s a load here); as six processes they loaded it six times.
// The self-tests (node:test) run in this process once the checks are done, and report as
// `node --test` does; a failing check or test fails the process.
//
//   node scripts/check-source.mjs
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main as checkDocPaths } from "./check-doc-paths.mjs";
import { main as checkJsdoc } from "./check-jsdoc.mjs";
import { main as checkLayers } from "./check-layers.mjs";

checkLayers();
checkDocPaths();
checkJsdoc();
// The self-tests' temporary files go in a folder of this run's own (os.tmpdir() reads TMPDIR), which
// must be empty when they are done: a self-test that made a folder and never removed it left three
// in /tmp on every `npm test` (105 of them before its `after` removed them). The folder goes either way.
const scratch = mkdtempSync(join(tmpdir(), "check-source-"));
process.env.TMPDIR = scratch;
process.on("exit", () => {
  const left = readdirSync(scratch);
  rmSync(scratch, { recursive: true, force: true });
  if (left.length === 0) return;
  console.error(`check-source: the self-tests left ${left.join(", ")} in the temporary folder`);
  process.exitCode = 1;
});
await import("./check-layers.test.mjs");
await import("./check-doc-paths.test.mjs");
await import("./check-jsdoc.test.mjs");
