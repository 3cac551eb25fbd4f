// The sqlite-wasm peer's conformance run, in Chromium (`npm run bench -- sqlite-conformance`):
// bench material, not part of npm test.
import { defineConfig } from "vitest/config";
import { playwright } from "@vitest/browser-playwright";
import { chromiumArgs, chromiumPath } from "../../test/support/chromium.js";

export default defineConfig({
  test: {
    include: ["bench/peers/*.conformance.browser.ts"],
    globals: true,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    browser: {
      enabled: true,
      headless: true,
      provider: playwright({ launchOptions: { executablePath: chromiumPath, args: chromiumArgs } }),
      instances: [{ browser: "chromium" }],
      screenshotFailures: false,
    },
  },
});
