#!/usr/bin/env node
// Empties dist/ before a build (`npm run build`, check:package's build). tsc only writes the files of
// today's sources, so without this a module since removed or renamed in src/ kept its old output in
// dist/, and `npm pack` (whose `files` is dist/) shipped it with the next release.
//
//   node scripts/clean-dist.mjs
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";

rmSync(join(resolve(import.meta.dirname, ".."), "dist"), { recursive: true, force: true });
