#!/usr/bin/env node
// `npm test` (and `npm run test:full`): every check and test suite, in
// phases. A phase's steps run side by side, each an npm script (or a list of
// them, one after another), with its output lines prefixed by the script's name. Phases run side by side too: a phase
// starts once the phase it comes `after` has passed, so the suite runs in
// lanes, and a phase marked `alone` waits for every other one and then has
// the machine to itself. At the end a table gives each phase's wall and CPU
// seconds (CPU: user + system of the step's whole process tree, as bash's
// `times` counts it) and the whole run's wall time: the figures
// docs/testing.md records.
//
//   node scripts/test.mjs [--depth=fast|full] [--from=<phase>] [--only=<phase>]
//
// --depth=full sets TEST_DEPTH=full for every step (test/support/depth.ts).
// --only runs one phase; --from runs that phase and every phase after it in
// the list, each as soon as the phases it comes after have passed or were
// left out. A new suite is one more step: add its npm script to the phase it
// fits, and never beside a step that measures time.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const options = Object.fromEntries(
  process.argv.slice(2).map((arg) => {
    const match = /^--(depth|from|only)=(.+)$/.exec(arg);
    if (!match) throw new Error(`scripts/test.mjs: unknown argument ${arg}`);
    return [match[1], match[2]];
  }),
);
const depth = options.depth ?? process.env.TEST_DEPTH ?? "fast";
if (depth !== "fast" && depth !== "full")
  throw new Error(`scripts/test.mjs: --depth must be fast or full, not ${depth}`);
/**
 * The phases, each a list of steps (run side by side), one after
 * another: each comes `after` the one before. Lanes side by side were
 * measured here and lost: the crash test's Chromium restarts are busy, not
 * waiting (the static checks went from 77 s to 470 s beside them), and
 * tests that wait on a server process or a page timed out. A phase with
 * `depth` runs only at that depth (or when named by --only); `alone` runs
 * last, once every other phase is done.
 */
const PHASES = [
  // Every check but the linters, in two busy lanes of about the same CPU time: tsc then Prettier; the
  // package (check:package builds dist/, which check:size:limits then bundles; the linters ignore dist/),
  // then the cycle check, then the layer and doc checks (check:layers and check:docs in one process).
  {
    name: "static checks",
    steps: [
      ["typecheck", "format:check"],
      ["check:package", "check:size:limits", "check:cycles", "check:source"],
    ],
  },
  // The linters (`npm run lint`: oxlint's type-aware promise rules, then ESLint's others without types,
  // about 33 CPU-s together) run beside the Node tests, which leave part of the two cores idle while they
  // wait on PostgreSQL, server processes and Chromium (a quarter at two files at a time, a tenth at three, as
  // now; beside the linters the tests take about 12 s longer, 87-90 s alone). In the static lanes they made
  // that phase 17 s longer for 13 s less in this one (two proofs of 2026-12-05: static 60.3-60.8 s, node
  // 133.7-138.9 s).
  // At the fast depth the Node phase runs the Node project's own files (`test:node:own`): every other
  // test file runs in real Chromium in the chromium phase, and ran here a second time on fake-indexeddb
  // (about a quarter of the phase). `test:node` (the full depth, and a contributor's quick loop) runs them all.
  { name: "node", steps: [depth === "full" ? "test:node" : "test:node:own", "lint"], after: "static checks" },
  // Chromium restarting after SIGKILLs, 40 times.
  { name: "crash", steps: ["test:crash"], after: "node" },
  { name: "chromium", steps: ["test:browser"], after: "crash" },
  // Sync under random faults mostly waits on cut connections and restarted servers (about a
  // quarter of a core), so it runs beside Firefox, which waits on its own browser; then the
  // demo's build for the e2e phases (e2e/demo-build.mjs), which sat alone at the start of e2e.
  { name: "firefox", steps: ["test:firefox", ["test:convergence", "e2e:build"]], after: "chromium" },
  { name: "e2e", steps: ["test:e2e:parallel"], after: "firefox" },
  // The Playwright kit's example project (examples/playwright), through @playwright/test, beside the
  // useStream example (examples/use-stream: its build, then one Chromium through Vitest).
  { name: "examples", steps: ["test:examples", "test:examples:use-stream"], after: "e2e" },
  // Measures time: alone.
  { name: "e2e timed", steps: ["test:e2e:timed"], alone: true },
];

for (const name of [options.from, options.only])
  if (name !== undefined && !PHASES.some((phase) => phase.name === name))
    throw new Error(`scripts/test.mjs: no phase "${name}" (phases: ${PHASES.map((p) => p.name).join(", ")})`);

/**
 * Runs one step: an npm script, or a list of them one after another (up to
 * the first that fails); resolves with its exit status and CPU seconds.
 */
async function runStep(step) {
  if (!Array.isArray(step)) return runScript(step);
  let cpu = 0;
  for (const script of step) {
    const result = await runScript(script);
    cpu += result.cpu;
    if (result.status !== 0) return { ...result, cpu };
  }
  return { script: step.join(" → "), status: 0, cpu };
}

/** Runs one npm script; resolves with its exit status and CPU seconds. */
function runScript(script) {
  return new Promise((resolve) => {
    // `times` prints the shell's own and then its children's user and system time.
    const child = spawn("bash", ["-c", `npm run --silent ${script}; status=$?; times >&3; exit $status`], {
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      env: { ...process.env, TEST_DEPTH: depth, E2E_DEMO_BUILD: demoBuild },
    });
    const prefix = `[${script}] `;
    createInterface({ input: child.stdout }).on("line", (line) => process.stdout.write(`${prefix}${line}\n`));
    createInterface({ input: child.stderr }).on("line", (line) => process.stderr.write(`${prefix}${line}\n`));
    let times = "";
    child.stdio[3].on("data", (chunk) => (times += chunk));
    child.on("close", (code, signal) => {
      const seconds = [...times.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      // Lines: the shell's user and system, then its children's user and system.
      const cpu = seconds.length >= 4 ? seconds[2] + seconds[3] : NaN;
      resolve({ script, status: code ?? (signal ? 1 : 0), cpu });
    });
  });
}

const listed =
  options.only !== undefined
    ? PHASES.filter((p) => p.name === options.only)
    : PHASES.slice(options.from === undefined ? 0 : PHASES.findIndex((p) => p.name === options.from)).filter(
        (p) => p.depth === undefined || p.depth === depth,
      );
const chosen = new Set(listed.map((p) => p.name));
// The e2e phases serve one build of the demo (e2e/global-setup.ts): built by e2e:build (or the first
// e2e phase run), removed at the end.
const demoBuild = mkdtempSync(join(tmpdir(), "demo-e2e-"));
process.on("exit", () => rmSync(demoBuild, { recursive: true, force: true }));
const results = [];
const failures = [];
const finished = new Map();
const suiteStart = performance.now();

/** Runs one phase (its steps side by side); resolves true if every step passed. */
async function runPhase(phase) {
  const named = phase.steps.map((step) => (Array.isArray(step) ? step.join(" → ") : step));
  console.log(`\n=== ${phase.name}: ${named.join(" + ")} (depth ${depth})`);
  const start = performance.now();
  const steps = await Promise.all(phase.steps.map(runStep));
  const wall = (performance.now() - start) / 1000;
  const cpu = steps.reduce((sum, step) => sum + step.cpu, 0);
  const startedAt = (start - suiteStart) / 1000;
  results.push({ phase: phase.name, startedAt, wall, cpu });
  console.log(`=== ${phase.name}: ${wall.toFixed(1)} s wall, ${cpu.toFixed(1)} s CPU`);
  failures.push(...steps.filter((step) => step.status !== 0));
  return steps.every((step) => step.status === 0);
}

/** Whether `phase` runs: after its predecessor passed, and never after a failure. */
function ready(phase) {
  // A phase left out (by --from, --only or its depth) passes its turn to the one it comes after.
  let before = phase.after;
  while (before !== undefined && !chosen.has(before)) before = PHASES.find((p) => p.name === before).after;
  return before === undefined ? Promise.resolve(true) : finished.get(before);
}

for (const phase of PHASES.filter((p) => chosen.has(p.name) && !p.alone))
  finished.set(
    phase.name,
    ready(phase).then((ok) => (ok && failures.length === 0 ? runPhase(phase) : false)),
  );
await Promise.all(finished.values());
for (const phase of PHASES.filter((p) => chosen.has(p.name) && p.alone))
  if (failures.length === 0) await runPhase(phase);
const elapsed = (performance.now() - suiteStart) / 1000;

const cpu = results.reduce((sum, r) => sum + r.cpu, 0);
console.log(`\n${"phase".padEnd(18)} ${"start s".padStart(8)} ${"wall s".padStart(8)} ${"CPU s".padStart(8)}`);
for (const r of results)
  console.log(
    `${r.phase.padEnd(18)} ${r.startedAt.toFixed(1).padStart(8)} ${r.wall.toFixed(1).padStart(8)} ${r.cpu.toFixed(1).padStart(8)}`,
  );
console.log(`${"total".padEnd(18)} ${"".padStart(8)} ${elapsed.toFixed(1).padStart(8)} ${cpu.toFixed(1).padStart(8)}`);
if (failures.length > 0) {
  for (const failed of failures) console.error(`\nnpm test: ${failed.script} failed (exit ${failed.status})`);
  process.exit(failures[0].status || 1);
}
