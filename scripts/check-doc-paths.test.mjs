// Self-test of scripts/check-doc-paths.mjs (node:test):
//   node --test scripts/check-doc-paths.test.mjs
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import {
  brokenLinks,
  citedFiles,
  citedPaths,
  headingAnchors,
  markdownLinks,
  missingPaths,
  resolves,
  sourceComments,
} from "./check-doc-paths.mjs";

/** The throwaway repositories made here, removed once every test has run. */
const made = [];
after(() => {
  for (const root of made) rmSync(root, { recursive: true, force: true });
});

/** A throwaway repository holding `files` (path → text); removed after the tests. */
function repository(files) {
  const root = mkdtempSync(join(tmpdir(), "doc-paths-"));
  made.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

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

describe("citedFiles", () => {
  it("also finds paths relative to a folder and bare file names", () => {
    const text = "the seam (idb/database.ts), `./format.ts`, ../golden/export.json and wire.ts; docs/sync.md";
    assert.deepEqual(citedFiles(text).sort(), [
      "../golden/export.json",
      "./format.ts",
      "docs/sync.md",
      "idb/database.ts",
      "wire.ts",
    ]);
  });

  it("skips library names, built and installed files, URLs, globs and assigned values", () => {
    const text = [
      "LangGraph.js and transformers.js",
      "dist/playwright.js and node_modules/idb/build/index.js",
      "https://example.com/a/b.ts",
      "src/**/*.test.ts",
      "JOURNAL_CRASH_REPORT=file.json",
      "@langchain/core/load",
    ].join("\n");
    assert.deepEqual(citedFiles(text), []);
  });
});

describe("sourceComments", () => {
  it("reads line and block comments with their line, not strings, templates or regular expressions", () => {
    const source = [
      "/** Top (a.ts). */",
      'const url = "https://x.test/b.ts // not a comment";',
      "const re = /\\/\\/ c\\.ts/;",
      "const t = `${url} // d.ts ${`/* e.ts */`}`; // f.ts",
      "function g() {",
      "  return 1; /* g.ts */",
      "}",
    ].join("\n");
    assert.deepEqual(sourceComments("x.ts", source), [
      { line: 1, text: "/** Top (a.ts). */" },
      { line: 4, text: "// f.ts" },
      { line: 6, text: "/* g.ts */" },
    ]);
  });
});

describe("resolves", () => {
  const root = repository({ "src/saver/put.ts": "", "src/journal/format.ts": "", "docs/sync.md": "" });

  it("from the root, the citing file's folder and its parents, and src/; .js also as its .ts source", () => {
    assert.equal(resolves(root, "src/journal/index.ts", "format.ts"), true); // same folder
    assert.equal(resolves(root, "src/journal/index.ts", "saver/put.ts"), true); // a parent (src/)
    assert.equal(resolves(root, "scripts/check.mjs", "saver/put.ts"), true); // src/
    assert.equal(resolves(root, "src/journal/index.ts", "docs/sync.md"), true); // the root
    assert.equal(resolves(root, "src/journal/index.ts", "./format.js"), true); // the import's .js
  });

  it("not from a sibling folder, and not a file that is gone", () => {
    assert.equal(resolves(root, "src/journal/index.ts", "put.ts"), false);
    assert.equal(resolves(root, "src/journal/index.ts", "journal-opfs.ts"), false);
  });
});

describe("markdown links", () => {
  const markdown = [
    "# Quick start",
    "## `new IndexedDBSaver(params?)`",
    "## Quick start",
    "See [sync](docs/sync.md#guarantees), [top](#quick-start), ![logo](img/logo.png),",
    "[site](https://example.com/x) and `[not](a-link.md)`.",
    "```",
    "[not a link either](nowhere.md)",
    "```",
  ].join("\n");

  it("lists link and image targets, outside code", () => {
    assert.deepEqual(markdownLinks(markdown), [
      "docs/sync.md#guarantees",
      "#quick-start",
      "img/logo.png",
      "https://example.com/x",
    ]);
  });

  it("makes GitHub's heading anchors, numbering repeats", () => {
    assert.deepEqual([...headingAnchors(markdown)], ["quick-start", "new-indexeddbsaverparams", "quick-start-1"]);
  });

  it("reports missing targets and anchors, relative to the linking file; other sites are not fetched", () => {
    const root = repository({
      "docs/a.md": "# A\n[b](b.md#there) [b2](b.md#gone) [c](c.md) [self](#a) [nope](#b) [out](../README.md)",
      "docs/b.md": "## There",
      "README.md": "[web](https://example.com/missing.md)",
    });
    assert.deepEqual(
      brokenLinks(
        root,
        "docs/a.md",
        "# A\n[b](b.md#there) [b2](b.md#gone) [c](c.md) [self](#a) [nope](#b) [out](../README.md)",
      ),
      [
        "links to b.md#gone, but docs/b.md has no heading with that anchor",
        "links to c.md, which does not exist",
        "links to #b, but docs/a.md has no heading with that anchor",
      ],
    );
    assert.deepEqual(brokenLinks(root, "README.md", "[web](https://example.com/missing.md)"), []);
  });
});

describe("missingPaths", () => {
  it("reports the cited paths that do not exist, per file: all of a markdown file, the comments of code", () => {
    const root = repository({
      "src/here.ts": "",
      "README.md": "`src/here.ts` and `src/gone.ts`",
      "src/a/index.ts": [
        "/**",
        " * See here.ts and",
        " * gone.ts.",
        " */",
        'export const path = "also-gone.ts"; // stale.ts',
      ].join("\n"),
    });
    assert.deepEqual(missingPaths(root, ["README.md", "src/a/index.ts"]), [
      { file: "README.md", line: undefined, path: "src/gone.ts" },
      { file: "src/a/index.ts", line: 3, path: "gone.ts" },
      { file: "src/a/index.ts", line: 5, path: "stale.ts" },
    ]);
  });
});
