// The type-aware promise rules run in oxlint (.oxlintrc.json), and an oxlint that finds no config, or a
// config whose rules do not reach TypeScript files, passes a clean repo as silently as a working one. So
// this plants a floating promise and a promise in an `if` in a TypeScript file of the repo's own tree
// (a folder made and removed here) and checks that `oxlint`, run as `npm run lint` runs it, reports both.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import assert from "node:assert/strict";

const root = join(import.meta.dirname, "..");

test("oxlint reports a floating promise and a promise in a condition in a TypeScript file", () => {
  const dir = mkdtempSync(join(root, "oxlint-probe-"));
  try {
    const file = join(dir, "probe.ts");
    writeFileSync(
      file,
      [
        "export function probe(): void {",
        "  Promise.resolve(1);",
        "  if (Promise.resolve(true)) console.log('never');",
        "}",
        "",
      ].join("\n"),
    );
    const run = spawnSync(join(root, "node_modules/.bin/oxlint"), [relative(root, file)], {
      cwd: root,
      encoding: "utf8",
    });
    const output = `${run.stdout}${run.stderr}`;
    assert.notEqual(run.status, 0, `oxlint passed a planted floating promise:\n${output}`);
    assert.match(output, /no-floating-promises/);
    assert.match(output, /no-misused-promises/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
