// How every browser run here launches Chromium (tests, e2e, bench): Debian's
// build (Playwright cannot download its own on these machines), overridable
// with CHROMIUM_PATH. Plain JS so bench/run.mjs can import it too.
import { existsSync } from "node:fs";

/** Path of Debian's full Chromium: what users run, so the bench measures it. */
export const fullChromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Path of the Chromium the tests launch: Debian's `chromium-headless-shell`
 * where installed (the same engine without the browser UI, as Playwright's
 * own headless runs use; a launch costs about half the CPU of the full
 * browser's, and the suite launches Chromium more than a hundred times),
 * else the full browser. CHROMIUM_PATH overrides both.
 */
export const chromiumPath =
  process.env.CHROMIUM_PATH ??
  (existsSync("/usr/bin/chromium-headless-shell") ? "/usr/bin/chromium-headless-shell" : "/usr/bin/chromium");

/** Flags that keep headless Chromium quiet on a machine with no network. */
export const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-dev-shm-usage",
];
