#!/usr/bin/env node
// Layer check (`npm run check:layers`): the library's folders under src/ form
// layers, and a module may import only from its own folder and the folders its
// layer lists below. Reads every non-test .ts file under src/, resolves each
// relative `import … from`, `export … from`, side-effect `import "…"` and
// dynamic `import("…")`, and fails with the list of imports that go where the
// rules say they may not.
//
//   node scripts/check-layers.mjs [srcDir]        (default: src)
//
// How a file is classified:
// - src/*.ts (top level): an entry point (index.ts, store.ts, playwright.ts).
//   An entry may import anything under src/; nothing in a layer folder may
//   import an entry. Before the folder layout lands every file sits here, so
//   the check passes trivially on a flat tree.
// - src/<folder>/**: the layer named <folder>, which must be listed in LAYERS.
// - tests (*.test.ts) and test helpers (a test-support/ folder) are not checked.
//
// A dynamic `import()` in a layer that runs in the browser must be the body
// of a `loadOnce(() => import("…"))` (src/core/tasks.ts): the chunk is loaded
// once, tried again after a failure, and a failure (an offline app whose
// build is not cached) is a package error, not the browser's bare TypeError.
// The Node-only layers (`node: true` below) import as they like.
//
// Type-only imports (`import type`, `export type`) follow the same rules,
// except that they are allowed to a layer that may only be loaded lazily
// (`dynamic` below): they vanish from the JavaScript, so they load nothing.
// `import { type X } from` is NOT type-only: with verbatimModuleSyntax it
// stays in the output as `import "…"`.
import { readdirSync, readFileSync } from "node:fs";
import { join, posix, relative, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";

/**
 * The layers: folder under src/ -> what it may import.
 * - `imports`: folders (or one module in a folder: "sync/protocol") it may import statically.
 * - `dynamic`: folders it may load only through `import()` (and name in type-only imports).
 * A folder may always import itself.
 */
export const LAYERS = {
  core: { imports: [] },
  idb: { imports: ["core"] },
  serde: { imports: ["core"] },
  // The row format the browser saver, the sync server and export share: shapes,
  // codecs, ids, channel versions. Pure: it opens no database.
  rows: { imports: ["serde", "core"] },
  journal: { imports: ["idb", "core"] },
  saver: { imports: ["rows", "idb", "serde", "journal", "core"], dynamic: ["portable"] },
  store: { imports: ["idb", "serde", "core"] },
  portable: { imports: ["rows", "serde", "core"] },
  // runs/: the waits ask isThreadRunning, in the page, whether a run holds a thread.
  // serde/: the page reads an encrypted app's database with the app's EncryptedSerializer.
  // sync/: only the SyncStatus type, for the status a test reads from the page.
  playwright: { imports: ["portable", "saver", "runs", "serde", "core"], dynamic: ["sync"], node: true },
  runs: { imports: ["saver", "core"] },
  // LangGraph's interrupt() with the config passed in: it reads LangGraph's run internals, nothing of ours.
  interrupt: { imports: ["core"] },
  // Replication moves the saver's raw rows (ciphertext as stored), so it works at the saver's level.
  sync: { imports: ["saver", "rows", "idb", "serde", "core"] },
  // Node only: the wire protocol and the shared row codecs; never the browser saver (it opens IndexedDB).
  "sync-server": { imports: ["sync/protocol", "sync/protocol-checks", "rows", "serde", "core"], node: true },
  // The Agent Server routes: runs go through runOnThread, thread records through idb/; rows/ for the
  // saver's id rules, so a thread id the saver would refuse is refused when the thread is created;
  // saver/syncing: whether the saver syncs (a checkpoint patched in place would reach no other device);
  // saver/sealing: the saver's row-bound serializer, which seals each run's events beside an encrypting saver.
  "agent-server": { imports: ["runs", "rows", "idb", "core", "saver/syncing", "saver/sealing"] },
};

/** Files the check skips: tests and test helpers. Paths are relative to src/, with "/". */
export function isTestFile(path) {
  return /\.test\.[cm]?ts$/.test(path) || /\.d\.[cm]?ts$/.test(path) || /(^|\/)test-support\//.test(path);
}

/** Where a file under src/ belongs: an entry (top level), a layer (its first folder), or a test. */
export function classify(path) {
  if (isTestFile(path)) return { kind: "test" };
  const slash = path.indexOf("/");
  if (slash === -1) return { kind: "entry" };
  return { kind: "layer", layer: path.slice(0, slash) };
}

/**
 * The relative module references of one file: `{ specifier, kind, line }`,
 * kind "static" (import/export … from, import "…"), "type" (import type,
 * export type) or "dynamic" (import("…") with a string literal).
 */
export function moduleReferences(fileName, source) {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = [];
  const add = (literal, kind, node, viaLoadOnce = false) => {
    const { line } = file.getLineAndCharacterOfPosition(node.getStart(file)); // the statement's first line
    found.push({ specifier: literal.text, kind, line: line + 1, viaLoadOnce });
  };
  /** `loadOnce(() => import("…"))`: the import is the arrow's body, the arrow loadOnce's argument. */
  const inLoadOnce = (call) =>
    ts.isArrowFunction(call.parent) &&
    call.parent.body === call &&
    ts.isCallExpression(call.parent.parent) &&
    ts.isIdentifier(call.parent.parent.expression) &&
    call.parent.parent.expression.text === "loadOnce";
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier, node.importClause?.isTypeOnly ? "type" : "static", node);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier, node.isTypeOnly ? "type" : "static", node);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length > 0 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0], "dynamic", node, inLoadOnce(node));
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal, "type", node); // `import("<module>").T` in a type
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found.filter((ref) => ref.specifier.startsWith("./") || ref.specifier.startsWith("../"));
}

/** The file a relative specifier names, as a path relative to src/ ("../x" when outside). */
export function resolveSpecifier(fromPath, specifier, files) {
  const base = posix.normalize(posix.join(posix.dirname(fromPath), specifier));
  const stem = base.replace(/\.(m|c)?js$/, "");
  const candidates = [
    base,
    `${stem}.ts`,
    `${stem}.mts`,
    `${stem}.cts`,
    `${stem}.tsx`,
    `${base}.ts`,
    `${base}/index.ts`,
  ];
  // Not a source file (a JSON or asset import, or a typo tsc reports): classify it by its path alone.
  return candidates.find((candidate) => files.has(candidate)) ?? base;
}

/** Does `target` (a path relative to src/) fall under one of `allowed` ("saver", "sync/protocol")? */
function allowedBy(allowed, target) {
  return (allowed ?? []).some((entry) => {
    const withoutExt = target.replace(/\.[cm]?ts$/, "");
    return target.startsWith(`${entry}/`) || withoutExt === entry;
  });
}

/**
 * Checks a set of sources. `files`: Map of path relative to src/ ("saver/index.ts") to source text.
 * Returns the violations, each `{ file, line, specifier, target, message }`.
 */
export function checkLayers(files, layers = LAYERS) {
  const violations = [];
  for (const [path, source] of files) {
    const from = classify(path);
    if (from.kind === "test") continue;
    if (from.kind === "layer" && !(from.layer in layers)) {
      violations.push({
        file: path,
        line: 1,
        specifier: "",
        target: "",
        message: `src/${from.layer}/ is not a known layer: add it to LAYERS in scripts/check-layers.mjs`,
      });
      continue;
    }
    for (const ref of moduleReferences(path, source)) {
      const target = resolveSpecifier(path, ref.specifier, files);
      const at = { file: path, line: ref.line, specifier: ref.specifier, target };
      if (ref.kind === "dynamic" && !ref.viaLoadOnce && from.kind === "layer" && !layers[from.layer].node) {
        violations.push({
          ...at,
          message: `load it with loadOnce(() => import("${ref.specifier}")) (core/tasks.ts): a bare import() failing offline throws the browser's TypeError`,
        });
        continue;
      }
      if (target.startsWith("../")) {
        violations.push({ ...at, message: `library code imports from outside src/ (${target})` });
        continue;
      }
      const to = classify(target);
      if (to.kind === "test") {
        violations.push({ ...at, message: `library code imports test code (src/${target})` });
        continue;
      }
      if (from.kind === "entry") continue; // entries may import anything under src/
      if (to.kind === "entry") {
        violations.push({ ...at, message: `layer ${from.layer} imports the entry point src/${target}` });
        continue;
      }
      if (to.layer === from.layer) continue;
      const rule = layers[from.layer];
      if (allowedBy(rule.imports, target)) continue;
      if (allowedBy(rule.dynamic, target)) {
        if (ref.kind !== "static") continue;
        violations.push({
          ...at,
          message: `layer ${from.layer} may load ${to.layer} only lazily: use import("${ref.specifier}") (or import type)`,
        });
        continue;
      }
      const may = [...rule.imports, ...(rule.dynamic ?? []).map((layer) => `${layer} (import() only)`)];
      violations.push({
        ...at,
        message: `layer ${from.layer} may not import ${to.layer} (src/${target}); it may import: ${may.join(", ") || "nothing"}`,
      });
    }
  }
  return violations;
}

/** Every .ts/.mts file under `dir`, as a Map of path relative to `dir` (with "/") to its text. */
export function readSources(dir) {
  const files = new Map();
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.[cm]?ts$/.test(entry.name))
        files.set(relative(dir, full).split(sep).join("/"), readFileSync(full, "utf8"));
    }
  };
  walk(dir);
  return files;
}

/**
 * Checks `srcDir` and prints the result; sets a failing exit code on a violation.
 * @param {string} [srcDir]
 */
export function main(srcDir = resolve(process.argv[2] ?? "src")) {
  const files = readSources(srcDir);
  const checked = [...files.keys()].filter((path) => classify(path).kind !== "test");
  const layered = new Set(
    checked
      .map(classify)
      .filter((c) => c.kind === "layer")
      .map((c) => c.layer),
  );
  const violations = checkLayers(files);
  const where = relative(process.cwd(), srcDir) || ".";
  if (violations.length === 0) {
    const layout = layered.size ? `layers: ${[...layered].sort().join(", ")}` : "flat tree: every file is an entry";
    console.log(`check-layers: ${checked.length} files under ${where}/ (${layout}), no violation`);
    return;
  }
  console.error(`check-layers: ${violations.length} violation(s) under ${where}/:`);
  for (const v of violations) {
    const spec = v.specifier ? ` "${v.specifier}"` : "";
    console.error(`  ${where}/${v.file}:${v.line}${spec}: ${v.message}`);
  }
  process.exitCode = 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
