#!/usr/bin/env node
// `npm run test:firefox`: the suites of vitest.firefox.config.ts (the
// official conformance suite, the graph scenarios at the full depth, the runs module and the
// security suites) in Debian's firefox-esr. Vitest's preview provider asks Vite to
// open the page, and Vite runs test/firefox/open.js (BROWSER) for it; that
// script does not end by itself, so Vitest runs in its own process group,
// which is ended when Vitest exits.
import { spawn } from "node:child_process";

const port = process.env.FIREFOX_TEST_PORT ?? "63390";
const child = spawn("npx", ["vitest", "run", "-c", "vitest.firefox.config.ts", ...process.argv.slice(2)], {
  stdio: "inherit",
  detached: true,
  env: { ...process.env, BROWSER: "test/firefox/open.js", FIREFOX_TEST_PORT: port },
});
const end = () => {
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // Already gone.
  }
};
process.on("SIGINT", end);
process.on("SIGTERM", end);
child.on("exit", (code, signal) => {
  end();
  process.exit(code ?? (signal ? 1 : 0));
});
