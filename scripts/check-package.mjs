#!/usr/bin/env node
// Package check (`npm run check:package`): builds (see below), packs the package exactly as
// `npm publish` would (the tarball, not the work tree), and runs on it
// - publint --strict: package.json fields, exports, files that exist;
// - @arethetypeswrong/cli with the esm-only profile: the types every export
//   resolves to, under node16 (ESM) and bundler resolution. The package is
//   ESM-only by design, so CommonJS and node10 resolution are not checked;
// - tsc on the tarball's declarations with `skipLibCheck: false` (TypeScript's
//   default): each entry's `.d.ts` and every file it reaches must compile, as
//   in an app that does not skip them. `stripInternal` drops an `@internal`
//   declaration from its file but not the imports of it in other files;
// - the `./playwright` entry in a project that has `playwright` and not
//   `@playwright/test` (a script driving a browser, Vitest, Cucumber): a Node
//   script seeds a page of Chromium and reads it back, and finds the fixture
//   naming the package it needs (scripts/playwright-peer/seed.mjs); tsc
//   compiles a TypeScript file importing the entry (scripts/playwright-peer/app.ts).
//
//   node scripts/check-package.mjs [--no-build]
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromiumArgs, chromiumPath } from "../test/support/chromium.mjs";

const root = resolve(import.meta.dirname, "..");
const bin = (name) => join(root, "node_modules", ".bin", name);

/** Runs a command in the package root; exits with its status when it fails. */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    console.error(`check-package: \`${[command, ...args].join(" ")}\` failed (exit ${result.status})`);
    process.exit(result.status ?? 1);
  }
  return result;
}

/**
 * Compiles every entry's declarations from the unpacked tarball, strict and without
 * `skipLibCheck`; the peers resolve from this repository's node_modules.
 */
function checkDeclarations(tarball) {
  const unpacked = join(out, "unpacked");
  run("mkdir", [unpacked]);
  run("tar", ["-xzf", tarball, "-C", unpacked]);
  symlinkSync(join(root, "node_modules"), join(unpacked, "node_modules"), "dir");
  const pkg = JSON.parse(readFileSync(join(unpacked, "package", "package.json"), "utf8"));
  const entries = Object.values(pkg.exports)
    .filter((target) => typeof target === "object")
    .map((target) => join(unpacked, "package", target.types));
  strictTsc(entries, root);
}

/** tsc on `files`, strict and without `skipLibCheck`, as an app that does not skip them compiles them. */
function strictTsc(files, cwd) {
  // TypeScript 7 (the build's compiler): errors as 5.9's, in a quarter of the time.
  run(
    "node",
    [
      join(root, "node_modules", "typescript-7", "bin", "tsc"),
      ...["--ignoreConfig", "--noEmit", "--strict", "--skipLibCheck", "false", "--types", "node"],
      ...["--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2022,dom"],
      ...files,
    ],
    { cwd },
  );
}

/**
 * The `./playwright` entry in a project of its own: the tarball unpacked into its
 * node_modules beside what npm would install with it, its dependencies and its peers
 * (linked from this repository's node_modules, where each resolves its own), all but
 * `@playwright/test`. The script seeds test/golden/export.json's thread.
 */
function checkPlaywrightWithoutRunner(tarball) {
  const project = join(out, "playwright-only");
  const installed = join(project, "node_modules", "langgraph-checkpoint-indexeddb");
  mkdirSync(installed, { recursive: true });
  run("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"]);
  const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
  const names = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies), "@types/node"];
  for (const name of names.filter((name) => name !== "@playwright/test")) {
    mkdirSync(join(project, "node_modules", name, ".."), { recursive: true });
    symlinkSync(join(root, "node_modules", name), join(project, "node_modules", name), "dir");
  }
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  const golden = JSON.parse(readFileSync(join(root, "test", "golden", "export.json"), "utf8"));
  writeFileSync(join(project, "thread.lgthread"), Buffer.from(golden.file, "base64"));
  for (const file of ["seed.mjs", "app.ts"])
    copyFileSync(join(root, "scripts", "playwright-peer", file), join(project, file));
  const latest = golden.memoryRoot[0].checkpoint;
  const expected = {
    launch: { executablePath: chromiumPath, args: chromiumArgs },
    checkpointId: latest.id,
    messages: latest.channel_values.messages.length,
  };
  run("node", ["seed.mjs", JSON.stringify(expected)], { cwd: project });
  strictTsc(["app.ts"], project);
}

// `npm run build` without its type check (--noCheck): `npm run typecheck` checks the same files
// with the same options (tsconfig.build.json extends tsconfig.json; its `types: []` changes
// nothing, as src/ imports node: modules) and runs beside this check in `npm test`. --noCheck
// still reports declaration-emit errors (a planted TS4094 failed either way) and writes the same
// dist/, byte for byte; what it drops, a file outside rootDir (TS6059), check:layers refuses (an
// import from outside src/). The build's tsc: 6.3 CPU-s with its check, 2.7 without.
if (!process.argv.includes("--no-build")) {
  run("node", [join(root, "scripts", "clean-dist.mjs")]);
  run("node", [join(root, "node_modules", "typescript-7", "bin", "tsc"), "-p", "tsconfig.build.json", "--noCheck"]);
  run("node", [join(root, "scripts", "build-playwright-bundle.mjs")]);
}

const out = mkdtempSync(join(tmpdir(), "check-package-"));
// Removed at exit, a failed step's too: run() ends the process, past any `finally`.
process.on("exit", () => rmSync(out, { recursive: true, force: true }));
// --ignore-scripts: prepack would build again; dist/ was just built.
const packed = run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", out], {
  stdio: ["ignore", "pipe", "inherit"],
});
const [info] = JSON.parse(packed.stdout.toString());
const tarball = join(out, info.filename);
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
console.log(
  `check-package: ${info.filename}: ${info.entryCount} files, ${kib(info.size)} packed, ${kib(info.unpackedSize)} unpacked`,
);
run(bin("publint"), ["run", tarball, "--strict"]);
run(bin("attw"), [tarball, "--profile", "esm-only", "--no-emoji"]);
checkDeclarations(tarball);
checkPlaywrightWithoutRunner(tarball);
console.log("check-package: publint, attw, tsc and a project without @playwright/test found no problem");
