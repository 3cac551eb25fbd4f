/**
 * The bench page: runs the suites named in `?only=` (all by default), one
 * after another, and leaves the rows on `window.__benchResult` for run.mjs.
 */
import type { BenchRow, Suite } from "./harness.js";
import { bindingChecksSuite } from "./suites/binding-checks.js";
import { encryptionSuite } from "./suites/encryption.js";
import { historySuite } from "./suites/history.js";
import { journalSuite } from "./suites/journal.js";
import { loadSuite } from "./suites/load.js";
import { longTasksSuite } from "./suites/long-tasks.js";
import { peersSuite } from "./peers/suite.js";
import { rowShapeSuite } from "./suites/row-shape.js";
import { saverSuite } from "./suites/saver.js";
import { storeSuite } from "./suites/store.js";
import { threadsSuite } from "./suites/threads.js";

declare global {
  interface Window {
    __benchResult?: { rows: BenchRow[]; environment: string; error?: string };
  }
}

const suites: Suite[] = [
  saverSuite,
  historySuite,
  encryptionSuite,
  journalSuite,
  bindingChecksSuite,
  storeSuite,
  threadsSuite,
  loadSuite,
  longTasksSuite,
];

// Run only when named (`npm run bench -- peers`): minutes of seeding four savers; row-shape
// measures shapes a next format might take (docs/benchmarks.md), not a figure of the saver's.
const namedOnly: Suite[] = [peersSuite, rowShapeSuite];

async function main(): Promise<void> {
  const only = new URLSearchParams(location.search).get("only")?.split(",");
  const rows: BenchRow[] = [];
  const environment = `${navigator.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? navigator.userAgent}, ${navigator.hardwareConcurrency} cores, timer ${crossOriginIsolated ? "5" : "100"} µs`;
  try {
    for (const suite of [...suites, ...namedOnly]) {
      if (only ? !only.includes(suite.name) : namedOnly.includes(suite)) continue;
      console.log(`bench: ${suite.name}…`);
      const suiteRows = await suite.run();
      for (const r of suiteRows)
        console.log(`bench:   ${r.name}: ${r.ours} vs ${r.baseline} (${r.baselineName}) = ${r.ratio}`);
      rows.push(...suiteRows);
    }
    window.__benchResult = { rows, environment };
  } catch (error) {
    window.__benchResult = { rows, environment, error: String((error as Error)?.stack ?? error) };
  }
}

void main();
