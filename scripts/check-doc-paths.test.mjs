// Self-test of scripts/check-doc-paths.mjs (node:test):
//   node --test scripts/check-doc-paths.test.mjs
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { citedPaths, missingPaths } from "./check-doc-paths.mjs";

describe("citedPaths", () => {
  it("finds files and folders in prose, code spans and parentheses, without trailing punctuation", () => {
    const text = "See `src/saver/put.ts`, (test/golden/) and bench/suites/load.ts. Also scripts/check-size.mjs:";
    assert.deepEqual(citedPaths(text), [
      "src/saver/put.ts",
      "test/golden/",
      "bench/suites/load.ts",
      "scripts/check-size.mjs",
    ]);
  });

  it("skips URLs, globs, brace lists, bare folder names and paths inside other paths", () => {
    const text = [
      "https://example.com/src/index.ts",
      "`src/**/*.test.ts`",
      "src/{core,idb}/x.ts",
      "see src/saver for the saver",
      "node_modules/pkg/src/index.js",
      "../shared/src/x.ts",
    ].join("\n");
    assert.deepEqual(citedPaths(text), []);
  });
});

describe("missingPaths", () => {
  it("reports the cited paths that do not exist, per file", () => {
    const root = mkdtempSync(join(tmpdir(), "doc-paths-"));
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src/here.ts"), "");
    writeFileSync(join(root, "README.md"), "`src/here.ts` and `src/gone.ts`");
    assert.deepEqual(missingPaths(root, ["README.md"]), [{ file: "README.md", path: "src/gone.ts" }]);
  });
});
