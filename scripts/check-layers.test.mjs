// Self-test of scripts/check-layers.mjs on fake trees (node:test):
//   node --test scripts/check-layers.test.mjs
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkLayers, classify, moduleReferences, readSources } from "./check-layers.mjs";

/** A fake src/ tree: path relative to src/ -> source. */
const tree = (files) => new Map(Object.entries(files));

/** The violations as "file:line -> message" lines, for readable assertions. */
const check = (files) => checkLayers(tree(files)).map((v) => `${v.file}:${v.line} ${v.message}`);

/** A layered tree that follows every rule. */
const CLEAN = {
  "index.ts": `export { IndexedDBSaver } from "./saver/saver.js";\nexport * from "./portable/portable.js";`,
  "store.ts": `export { IndexedDBStore } from "./store/store.js";`,
  "playwright.ts": `import type { PageApi } from "./playwright/page.js";\nexport type { PageApi };`,
  "core/errors.ts": `export class IndexedDBCheckpointError extends Error {}`,
  "core/bytes.ts": `import { IndexedDBCheckpointError } from "./errors.js";\nexport const e = IndexedDBCheckpointError;`,
  "core/tasks.ts": `export const loadOnce = (load) => load;`,
  "idb/db.ts": `import { IndexedDBCheckpointError } from "../core/errors.js";\nexport const x = IndexedDBCheckpointError;`,
  "serde/msgpack/msgpack.ts": `import { e } from "../../core/bytes.js";\nexport const m = e;`,
  "serde/binding.ts": `export { m } from "./msgpack/msgpack.js";`,
  "journal/journal.ts": `import { x } from "../idb/db.js";\nexport const j = x;`,
  "saver/saver.ts": [
    `import { x } from "../idb/db.js";`,
    `import { m } from "../serde/binding.js";`,
    `import { j } from "../journal/journal.js";`,
    `import type { ThreadExport } from "../portable/portable.js";`,
    `import { loadOnce } from "../core/tasks.js";`,
    `const portable = loadOnce(() => import("../portable/portable.js"));`,
    `export async function exportThread(): Promise<ThreadExport> {`,
    `  const { exportThread } = await portable();`,
    `  return exportThread(x, m, j);`,
    `}`,
  ].join("\n"),
  "store/store.ts": `import { x } from "../idb/db.js";\nimport { m } from "../serde/binding.js";\nexport const s = [x, m];`,
  "rows/codec.ts": `import { m } from "../serde/binding.js";\nimport { e } from "../core/bytes.js";\nexport const r = [m, e];`,
  "portable/portable.ts": `import { m } from "../serde/binding.js";\nimport type { r } from "../rows/codec.js";\nexport const p = m;`,
  "playwright/page.ts": `import { p } from "../portable/portable.js";\nimport { exportThread } from "../saver/saver.js";\nexport const page = [p, exportThread];`,
  "sync/protocol.ts": `export const PROTOCOL = 1;`,
  "sync/client.ts": `import { exportThread } from "../saver/saver.js";\nexport const c = exportThread;`,
  "sync-server/server.ts": `import { PROTOCOL } from "../sync/protocol.js";\nimport { r } from "../rows/codec.js";\nexport const s = [PROTOCOL, r];`,
  // Tests and test helpers are not checked.
  "core/bytes.test.ts": `import { IndexedDBSaver } from "../index.js";\nimport { f } from "../../test/support/f.js";`,
  "test-support/fixtures.ts": `import { IndexedDBSaver } from "../index.js";`,
};

describe("check-layers", () => {
  it("passes a layered tree that follows the rules", () => {
    assert.deepEqual(check(CLEAN), []);
  });

  it("passes a flat tree: every top-level file is an entry", () => {
    assert.deepEqual(
      check({
        "index.ts": `export * from "./saver.js";`,
        "saver.ts": `import { importThread } from "./portable.js";\nimport "./errors.js";`,
        "portable.ts": `import { IndexedDBSaver } from "./saver.js";`,
        "errors.ts": `import { x } from "./index.js";`,
      }),
      [],
    );
  });

  it("catches an upward import: core importing saver", () => {
    assert.deepEqual(check({ ...CLEAN, "core/guards.ts": `import { exportThread } from "../saver/saver.js";` }), [
      "core/guards.ts:1 layer core may not import saver (src/saver/saver.ts); it may import: nothing",
    ]);
  });

  it("catches a sideways import: portable importing saver, statically or with import()", () => {
    const found = check({
      ...CLEAN,
      "portable/import.ts": `import { exportThread } from "../saver/saver.js";\nconst lazy = loadOnce(() => import("../saver/saver.js"));`,
    });
    assert.equal(found.length, 2);
    assert.match(found[0], /^portable\/import\.ts:1 layer portable may not import saver/);
    assert.match(found[1], /^portable\/import\.ts:2 layer portable may not import saver/);
  });

  it("asks a browser layer's import() to go through loadOnce; the Node-only layers import as they like", () => {
    const bare = `export const load = () => import("../portable/portable.js");`;
    assert.deepEqual(check({ ...CLEAN, "saver/lazy.ts": bare }), [
      `saver/lazy.ts:1 load it with loadOnce(() => import("../portable/portable.js")) (core/tasks.ts): a bare import() failing offline throws the browser's TypeError`,
    ]);
    // In loadOnce, but not as the arrow's body (a block, or a call of another loader): still bare.
    const block = `const m = loadOnce(() => { return import("../portable/portable.js"); });`;
    assert.equal(check({ ...CLEAN, "saver/lazy.ts": block }).length, 1);
    assert.equal(check({ ...CLEAN, "saver/lazy.ts": `const m = once(() => import("./saver.js"));` }).length, 1);
    assert.deepEqual(check({ ...CLEAN, "sync-server/cli.ts": `const s = () => import("../rows/codec.js");` }), []);
  });

  it("allows saver -> portable only through import() or import type", () => {
    assert.deepEqual(check({ ...CLEAN, "saver/export.ts": `import { p } from "../portable/portable.js";` }), [
      `saver/export.ts:1 layer saver may load portable only lazily: use import("../portable/portable.js") (or import type)`,
    ]);
    // `import { type X }` stays as `import "…"` under verbatimModuleSyntax: a static import.
    assert.equal(
      check({ ...CLEAN, "saver/x.ts": `import { type ThreadExport } from "../portable/portable.js";` }).length,
      1,
    );
    assert.deepEqual(
      check({ ...CLEAN, "saver/x.ts": `export type { ThreadExport } from "../portable/portable.js";` }),
      [],
    );
  });

  it("checks export … from and side-effect imports", () => {
    const found = check({
      ...CLEAN,
      "idb/reexport.ts": `export { j } from "../journal/journal.js";`,
      "serde/side.ts": `import "../idb/db.js";`,
    });
    assert.deepEqual(
      found.map((line) => line.split(" (")[0]),
      ["idb/reexport.ts:1 layer idb may not import journal", "serde/side.ts:1 layer serde may not import idb"],
    );
  });

  it("allows one module of a folder when the rule names it (sync-server -> sync/protocol only)", () => {
    const found = check({ ...CLEAN, "sync-server/bad.ts": `import { c } from "../sync/client.js";` });
    assert.equal(found.length, 1);
    assert.match(found[0], /layer sync-server may not import sync \(src\/sync\/client\.ts\)/);
  });

  it("keeps the row codecs pure and the sync server off the browser saver", () => {
    const found = check({
      ...CLEAN,
      "rows/ids.ts": `import { x } from "../idb/db.js";`,
      "rows/shapes.ts": `import { exportThread } from "../saver/saver.js";`,
      "sync-server/saver.ts": `import { exportThread } from "../saver/saver.js";`,
    });
    assert.deepEqual(
      found.map((line) => line.split(" (")[0]),
      [
        "rows/ids.ts:1 layer rows may not import idb",
        "rows/shapes.ts:1 layer rows may not import saver",
        "sync-server/saver.ts:1 layer sync-server may not import saver",
      ],
    );
  });

  it("forbids a layer importing an entry point, test code, or code outside src/", () => {
    const found = check({
      ...CLEAN,
      "store/a.ts": `import { IndexedDBSaver } from "../index.js";`,
      "store/b.ts": `import { f } from "../test-support/fixtures.js";`,
      "store/c.ts": `import { g } from "../../test/support/g.js";`,
    });
    assert.deepEqual(found, [
      "store/a.ts:1 layer store imports the entry point src/index.ts",
      "store/b.ts:1 library code imports test code (src/test-support/fixtures.ts)",
      "store/c.ts:1 library code imports from outside src/ (../test/support/g.js)",
    ]);
  });

  it("reports a folder that is not a known layer", () => {
    assert.deepEqual(check({ ...CLEAN, "misc/util.ts": `export const u = 1;` }), [
      "misc/util.ts:1 src/misc/ is not a known layer: add it to LAYERS in scripts/check-layers.mjs",
    ]);
  });

  it("reads module references, not strings or comments that look like them", () => {
    const refs = moduleReferences(
      "x.ts",
      [
        `// import { a } from "./commented.js";`,
        `const text = 'import { b } from "./in-a-string.js"';`,
        `import {`,
        `  c,`,
        `  type D,`,
        `} from "./multi-line.js";`,
        `import type { E } from "./types.js";`,
        `import pkg from "some-package";`,
        `const vite = await import("vite" as string);`,
        `let t: import("./inline-type.js").T;`,
        `export * as ns from "./namespace.js";`,
      ].join("\n"),
    );
    assert.deepEqual(
      refs.map(({ specifier, kind, line }) => `${line} ${kind} ${specifier}`),
      ["3 static ./multi-line.js", "7 type ./types.js", "10 type ./inline-type.js", "11 static ./namespace.js"],
    );
  });

  it("classifies paths", () => {
    assert.deepEqual(classify("index.ts"), { kind: "entry" });
    assert.deepEqual(classify("serde/msgpack/types.ts"), { kind: "layer", layer: "serde" });
    assert.deepEqual(classify("saver/saver.test.ts"), { kind: "test" });
    assert.deepEqual(classify("saver.property.test.ts"), { kind: "test" });
  });

  it("passes on this repository's src/", () => {
    const violations = checkLayers(readSources(new URL("../src", import.meta.url).pathname));
    assert.deepEqual(violations, []);
  });
});
