// How every browser run here launches Chromium (tests, e2e, bench): Debian's
// build (Playwright cannot download its own on these machines), overridable
// with CHROMIUM_PATH. Plain JS so bench/run.mjs can import it too.

/** Path of the Chromium binary. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

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
