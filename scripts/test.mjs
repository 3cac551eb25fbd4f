#!/usr/bin/env node
// `npm test` (and `npm run test:full`): every check and test suite, in
// phases. The steps of a phase run side by side, each an npm script, with
// its output lines prefixed by its name; the next phase starts once every
// step of this one has passed. At the end a table gives each phase's wall
// and CPU seconds (CPU: user + system of the step's whole process tree, as
// bash's `times` counts it), the figures docs/testing.md records.
//
//   node scripts/test.mjs [--depth=fast|full] [--from=<phase>] [--only=<phase>]
//
// --depth=full sets TEST_DEPTH=full for every step (test/support/depth.ts).
// Steps share a phase only where they do not compete for the 2 cores the
// suite is sized for, and never beside a step that measures time (the
// timed e2e pass of `test:e2e` runs alone in its own phase). A new suite
// is one more step: add its npm script to the phase it fits.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** The phases, in order; each step is an npm script of package.json. */
const PHASES = [
  // tsc and ESLint are each one busy core.
  { name: "static checks", steps: ["typecheck", "check:static"] },
  // check:package builds dist/, which check:size:limits then bundles.
  { name: "package", steps: ["check:package"] },
  { name: "size", steps: ["check:size:limits"] },
  { name: "node", steps: ["test:node"] },
  { name: "chromium", steps: ["test:browser"] },
  { name: "firefox", steps: ["test:firefox"] },
  { name: "e2e", steps: ["test:e2e:parallel"] },
  // The Playwright kit's example project (examples/playwright), through @playwright/test.
  { name: "examples", steps: ["test:examples"] },
  // Measures time: alone.
  { name: "e2e timed", steps: ["test:e2e:timed"] },
];

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
for (const name of [options.from, options.only])
  if (name !== undefined && !PHASES.some((phase) => phase.name === name))
    throw new Error(`scripts/test.mjs: no phase "${name}" (phases: ${PHASES.map((p) => p.name).join(", ")})`);

/** Runs one npm script; resolves with its exit status and CPU seconds. */
function runStep(script) {
  return new Promise((resolve) => {
    // `times` prints the shell's own and then its children's user and system time.
    const child = spawn("bash", ["-c", `npm run --silent ${script}; status=$?; times >&3; exit $status`], {
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      env: { ...process.env, TEST_DEPTH: depth },
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

const results = [];
let failed;
let started = options.from === undefined;
for (const phase of PHASES) {
  if (options.only !== undefined && phase.name !== options.only) continue;
  if (phase.name === options.from) started = true;
  if (!started) continue;
  console.log(`\n=== ${phase.name}: ${phase.steps.join(" + ")} (depth ${depth})`);
  const start = performance.now();
  const steps = await Promise.all(phase.steps.map(runStep));
  const wall = (performance.now() - start) / 1000;
  const cpu = steps.reduce((sum, step) => sum + step.cpu, 0);
  results.push({ phase: phase.name, wall, cpu });
  console.log(`=== ${phase.name}: ${wall.toFixed(1)} s wall, ${cpu.toFixed(1)} s CPU`);
  failed = steps.find((step) => step.status !== 0);
  if (failed) break;
}

const total = results.reduce((sum, r) => ({ wall: sum.wall + r.wall, cpu: sum.cpu + r.cpu }), { wall: 0, cpu: 0 });
console.log(`\n${"phase".padEnd(18)} ${"wall s".padStart(8)} ${"CPU s".padStart(8)}`);
for (const r of [...results, { phase: "total", ...total }])
  console.log(`${r.phase.padEnd(18)} ${r.wall.toFixed(1).padStart(8)} ${r.cpu.toFixed(1).padStart(8)}`);
if (failed) {
  console.error(`\nnpm test: ${failed.script} failed (exit ${failed.status})`);
  process.exit(failed.status || 1);
}
