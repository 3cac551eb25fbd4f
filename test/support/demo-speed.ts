/**
 * The demo's two deliberate costs, lowered for its browser tests that are not about them.
 *
 * - PBKDF2: at the app's 600,000 rounds (`LOCK_ITERATIONS`) a key costs about 0.1 CPU-s in Chromium, and
 *   test/suites/demo-session-lock.browser.test.ts derives 85 (each lock, unlock, change and settling; the old
 *   passphrase and the new): 7.7 of its 21.8 s. The same code runs at {@link CHEAP_LOCK_ROUNDS}; the app's
 *   rounds are proved in Chromium by test/suites/demo-lock-rounds.browser.test.ts, and by the e2e tests,
 *   which run the built demo.
 * - The local model's pace: it waits 150 ms before its first word and 15 ms a step after (demo/src/model.ts),
 *   which was 11 of the same file's 18.7 s of tests (25 turns), none of it CPU, and 3.6 of
 *   test/suites/demo-approval.browser.test.ts's 5.3 s. `?pace=0` in the page's address answers at once, as
 *   the e2e tests' pages do.
 *
 * The Chromium project's files share their page, so both are put back after the calling file's last test.
 */
import { afterAll, beforeAll } from "vitest";
import { setLockRoundsForTests } from "../../demo/src/settings.js";

/** Not 1: a planted row at 1 round must still differ from the rounds in force (and be refused). */
export const CHEAP_LOCK_ROUNDS = 1_000;

/**
 * In every test of the calling file the demo's lock keys are derived at {@link CHEAP_LOCK_ROUNDS}, and its
 * local model answers at once (`?pace=0` in the page's address).
 */
export function demoAtTestSpeed(): void {
  let restoreRounds: (() => void) | undefined;
  let address: string | undefined;
  beforeAll(() => {
    restoreRounds = setLockRoundsForTests(CHEAP_LOCK_ROUNDS);
    address = location.href;
    const url = new URL(address);
    url.searchParams.set("pace", "0");
    history.replaceState(history.state, "", url);
  });
  afterAll(() => {
    restoreRounds?.();
    history.replaceState(history.state, "", address);
  });
}
