/**
 * The demo's PBKDF2 rounds in Chromium. At the app's own 600,000 (`LOCK_ITERATIONS`), a lock opens with its
 * passphrase only, and a passphrase change's key (raw bits from `crypto.subtle.deriveBits`, to seal for the
 * other lock) is the key `unlock` derives (`EncryptedSerializer.fromPassphrase`): the demo's other browser
 * tests derive at a few rounds (test/support/demo-speed.ts), and the e2e tests run the built demo at
 * the app's. And the rounds tests lower are the only ones a lock row may ask for while lowered: another count
 * is refused, and once they are put back a row written at them is refused too, as the app refuses any row
 * with other rounds than its own.
 */
import { expect, it } from "vitest";
import {
  InvalidLockError,
  LOCK_ITERATIONS,
  WrongPassphraseError,
  createLock,
  lockRounds,
  setLockRoundsForTests,
  titlePlace,
  unlock,
} from "../../demo/src/settings.js";
import type { LockRow } from "../../demo/src/threads-db.js";
import { newLockKey } from "../../demo/src/vault-key-change.js";
import { CHEAP_LOCK_ROUNDS } from "../support/demo-speed.js";

const PASSPHRASE = "a passphrase for the rounds test";

it("at the app's 600,000 rounds a lock opens with its passphrase only, and a change's raw key is unlock's", async () => {
  expect([lockRounds(), LOCK_ITERATIONS]).toEqual([600_000, 600_000]);
  const { row, vault } = await createLock(PASSPHRASE);
  expect(row.iterations).toBe(600_000);
  await expect(unlock(row, "not the passphrase")).rejects.toBeInstanceOf(WrongPassphraseError);
  const sealed = await vault.seal("a title", titlePlace("t"));
  expect(await (await unlock(row, PASSPHRASE)).open(sealed, titlePlace("t"))).toBe("a title");
  // A change's new lock: its check value sealed by the raw bits, opened by the key unlock derives.
  const next = await newLockKey("the passphrase after a change");
  expect(next.row.iterations).toBe(600_000);
  expect((await unlock(next.row, "the passphrase after a change")).locked).toBe(true);
});

it("rounds lowered for tests are the only ones a lock row may ask for; put back, the app refuses the test's rows", async () => {
  const restore = setLockRoundsForTests(CHEAP_LOCK_ROUNDS);
  let row: LockRow;
  try {
    row = (await createLock(PASSPHRASE)).row;
    expect(row.iterations).toBe(CHEAP_LOCK_ROUNDS);
    expect((await unlock(row, PASSPHRASE)).locked).toBe(true);
    for (const iterations of [1, CHEAP_LOCK_ROUNDS + 1, LOCK_ITERATIONS])
      await expect(unlock({ ...row, iterations }, PASSPHRASE)).rejects.toThrow(
        new InvalidLockError(
          `This lock record was not written by this app (it asks for ${iterations} PBKDF2 rounds instead of ${CHEAP_LOCK_ROUNDS}), so it is not used. Erase all data to start again.`,
        ),
      );
  } finally {
    restore();
  }
  expect(lockRounds()).toBe(LOCK_ITERATIONS);
  await expect(unlock(row, PASSPHRASE)).rejects.toThrow(
    `it asks for ${CHEAP_LOCK_ROUNDS} PBKDF2 rounds instead of ${LOCK_ITERATIONS}`,
  );
});
