#!/usr/bin/env node
// The long soak of the sync convergence test (test/suites/sync-convergence.node.test.ts):
//   npm run soak:sync -- --seeds 1000 [--first 1] [--ops 40]
//   npm run soak:sync -- --minutes 30 [--first 1]
// Runs the seeds in batches (one Vitest run each: a PostgreSQL and two
// server processes per batch), prints every failing seed with its op log as
// the test reports it, and ends with a summary; exits 1 when any seed failed.
// A failing seed replays alone: CONVERGENCE_SEED=n CONVERGENCE_OPS=k npx vitest run --project convergence
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    seeds: { type: "string" },
    minutes: { type: "string" },
    first: { type: "string", default: "1" },
    ops: { type: "string" },
    batch: { type: "string" },
  },
});
if ((values.seeds === undefined) === (values.minutes === undefined)) {
  console.error("Usage: npm run soak:sync -- --seeds N | --minutes M [--first S] [--ops K] [--batch B]");
  process.exit(2);
}
const total = values.seeds === undefined ? Infinity : Number(values.seeds);
const deadline = values.minutes === undefined ? Infinity : Date.now() + Number(values.minutes) * 60_000;
// Shorter batches under a time limit, so the soak ends close to it.
const batch = Number(values.batch ?? (values.minutes === undefined ? 100 : 25));
let next = Number(values.first);
const end = next + total;
const failed = [];
let ran = 0;
// What the passing seeds injected, summed from their last lines (test/support/sync/convergence.ts).
const FAULTS = [
  "server kills",
  "postgres restarts",
  "server starts while postgres was down",
  "tabs closed",
  "links cut",
];
const faults = FAULTS.map(() => 0);
const started = Date.now();

/** One Vitest run of `count` seeds from `from`; resolves with the seeds that failed and whether it completed. */
function runBatch(from, count) {
  return new Promise((resolve) => {
    const env = { ...process.env, CONVERGENCE_FIRST_SEED: String(from), CONVERGENCE_SEEDS: String(count) };
    if (values.ops) env.CONVERGENCE_OPS = values.ops;
    const child = spawn("npx", ["vitest", "run", "--project", "convergence", "--silent=false"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const seeds = new Set();
    const passed = new Set();
    let tail = "";
    const scan = (chunk) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-20_000);
      for (const match of text.matchAll(/Convergence seed (\d+) failed/g)) seeds.add(Number(match[1]));
      // Lines carry colour codes before the text: match anywhere, count each seed once.
      for (const match of text.matchAll(/convergence seed (\d+): [^\n]*faults: ([^\n]*)/g)) {
        if (passed.has(Number(match[1]))) continue;
        passed.add(Number(match[1]));
        FAULTS.forEach((name, i) => (faults[i] += Number(new RegExp(`(\\d+) ${name}`).exec(match[2])?.[1] ?? 0)));
      }
      process.stdout.write(text);
    };
    child.stdout.on("data", scan);
    child.stderr.on("data", scan);
    child.on("exit", (code) => resolve({ seeds: [...seeds], code, passed: passed.size, tail }));
  });
}

while (next < end && Date.now() < deadline) {
  const count = Math.min(batch, end - next);
  const result = await runBatch(next, count);
  ran += result.passed + result.seeds.length;
  failed.push(...result.seeds);
  if (result.code !== 0 && result.seeds.length === 0) {
    console.error(
      `\nsoak: the batch of seeds ${next}..${next + count - 1} failed without a seed failure:\n${result.tail}`,
    );
    process.exit(1);
  }
  next += count;
}

const minutes = ((Date.now() - started) / 60_000).toFixed(1);
console.log(
  `\nsoak:sync ${ran} seeds (${Number(values.first)}..${next - 1}) in ${minutes} min: ` +
    (failed.length === 0 ? "all converged" : `${failed.length} failed: ${failed.join(", ")}`),
);
console.log(
  `soak:sync faults in the seeds that converged: ${FAULTS.map((name, i) => `${faults[i]} ${name}`).join(", ")}`,
);
process.exit(failed.length === 0 ? 0 : 1);
