import { defineConfig } from "vitest/config";
import { preview } from "@vitest/browser-preview";
import { configuredDepth } from "./test/support/depth-config.js";

/**
 * Firefox (Debian's firefox-esr) runs the official conformance suite (and,
 * at the full depth, the graph scenarios), the runs module, and the security suites that depend
 * on the browser (its IndexedDB, WebCrypto and OPFS): the journal purge on
 * OPFS, key rotation, structural binding, export binding and the attacks on
 * stored rows; the golden databases of schema versions 3 and 5 and of row formats 1 and 2, and the latest
 * read's guess against another tab's writes. `npm run test:firefox` (test/firefox/run.mjs). IndexedDB
 * needs a real origin, which the fixed API host and port give.
 */
export default defineConfig({
  test: {
    globals: true,
    provide: { testDepth: configuredDepth() },
    include: [
      "test/suites/conformance.test.ts",
      // LangGraph's graphs compared with MemorySaver (reload, interrupts, forks, failed parallel steps,
      // subgraphs, Send, 45 turns of MessagesDeltaValue, three durabilities): saver logic, the same in
      // every engine, which Node and Chromium check at either depth. What of it touches Firefox's engine
      // (IndexedDB's ranges, getAll and transactions under LangGraph's real scheduling) the fast set still
      // does: the conformance suite, and real graphs in the runs module, the interrupt scenarios and
      // parent-writes-attacks. About 12 s of the page (a tenth of its tests' time), so at the full depth.
      ...(configuredDepth() === "full" ? ["test/suites/graphs.test.ts"] : []),
      "src/runs/runs.browser.test.ts",
      "test/suites/journal-purge.test.ts",
      "test/suites/key-rotation.test.ts",
      "test/suites/structural-binding.test.ts",
      "test/suites/chain-binding.test.ts",
      "test/suites/export-binding.test.ts",
      "test/suites/security.test.ts",
      // Attacks on row format 2's inline values and row binding 4's parent_writes.
      "test/suites/inline-attacks.test.ts",
      "test/suites/parent-writes-attacks.test.ts",
      "test/suites/golden-schema3.test.ts",
      "test/suites/golden-format1.test.ts",
      // This round's formats: row format 2 (values inline) and schema step 5 (rows listing versions without a value).
      "test/suites/golden-format2.test.ts",
      "test/suites/golden-schema5.test.ts",
      "test/suites/golden-schema6.test.ts",
      // The agent server's own database at schema version 3, opened and upgraded by the current code.
      "test/suites/golden-agent-schema3.test.ts",
      // Goldens and store rows altered outside the package (bigint and cyclic chains: what IndexedDB stores).
      "test/suites/golden-format1-altered.test.ts",
      "test/suites/store-format-attack.test.ts",
      // Store rows keyed by no namespace, and items sharing a seq (IndexedDB's order of equal index keys).
      "test/suites/store-namespace-rows.test.ts",
      "test/suites/store-seq-collisions.test.ts",
      // Values of every size in format-1 goldens (Node and Chromium read them at either depth):
      // about 6 s of Firefox's one page, so at the full depth only.
      ...(configuredDepth() === "full" ? ["test/suites/golden-format1-sizes.test.ts"] : []),
      "src/saver/recent.test.ts",
      // putWrites' early commit with an add the browser then refuses: engines differ there (Chromium aborts).
      "src/saver/put-writes.test.ts",
      "test/suites/interrupt-differential.browser.test.ts",
      // The page side of the ./playwright kit: clear's marker and journal, the SyncClient status recorder.
      "src/playwright/clear.browser.test.ts",
      "src/playwright/sync-status.browser.test.ts",
    ],
    testTimeout: 60_000,
    // The files share their page, as in the Chromium project (see vite.config.ts).
    isolate: false,
    // The preview provider's page never closes by itself (test/firefox/run.mjs ends its process
    // group): waiting Vitest's default 10 s for it after the last test proves nothing.
    teardownTimeout: 1_000,
    browser: {
      enabled: true,
      provider: preview(),
      // The preview provider opens a page and cannot run headless itself
      // (Vitest turns headless on under CI=true); open.js starts Firefox headless.
      headless: false,
      instances: [{ browser: "firefox" }],
      api: { host: "127.0.0.1", port: Number(process.env.FIREFOX_TEST_PORT ?? 63390), strictPort: true },
    },
  },
});
