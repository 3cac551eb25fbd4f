/**
 * Removing the lock a second time on the same session (h173, reviewing
 * 067c3c3, which re-enables Yes after a failed removal): both tests fail on
 * 0c7f9cd, the conversations lost. The session a removal ran on was closed
 * by it once the lock record went; a second removal on it deletes the plain
 * copies as leftovers of a cut migration, then copies again from encrypted
 * databases the first removal deleted, in part or whole.
 */
import type { Page } from "playwright";
import { beforeAll, expect, test } from "vitest";
import { lockedVaultOf, ready, transcript, unlockWith, useHarness, type StorageState } from "./support.js";

const harness = useHarness();
const PASSPHRASE = "correct horse battery staple";

/** One thread ("kept thread"), locked with PASSPHRASE, at rest behind the lock screen. */
let lockedVault: StorageState;
beforeAll(async () => {
  lockedVault = await lockedVaultOf(["kept thread"], PASSPHRASE);
});

/** A tab on a copy of {@link lockedVault}, unlocked, its Settings open at "Remove the lock…". */
async function unlockedAtSettings(): Promise<Page> {
  const page = await (await harness().restart(lockedVault)).page();
  await unlockWith(page, PASSPHRASE);
  await ready(page);
  await expect.poll(() => transcript(page)).toContain("user: kept thread");
  await page.getByTestId("settings").click();
  return page;
}

/** Whether a lock migration holds, or waits for, its Web Lock in `page`'s origin. */
const migrating = (page: Page) =>
  page.evaluate(async () => {
    const { held = [], pending = [] } = await navigator.locks.query();
    return [...held, ...pending].some((lock) => lock.name === "langgraph-demo:vault-migration");
  });

/** A new tab of the same profile, unlocked if it asks: the open thread's transcript. */
async function transcriptLeft(): Promise<string[]> {
  const next = await harness().page();
  await Promise.race([next.getByTestId("unlock-passphrase").waitFor(), next.getByTestId("composer").waitFor()]).catch(
    async (error: unknown) => {
      throw new Error(`The next start: ${(await next.locator("body").innerText()).slice(0, 400)}`, { cause: error });
    },
  );
  if (await next.getByTestId("unlock-passphrase").count()) {
    await unlockWith(next, PASSPHRASE);
  }
  await ready(next);
  await expect.poll(() => next.getByTestId("thread").count()).toBe(1);
  // The thread's row is the demo's own database's; its messages are the checkpoints'.
  await expect.poll(() => transcript(next)).not.toEqual([]);
  return transcript(next);
}

test("a removal that failed after the lock record went, tried again with Yes, keeps the conversation", async () => {
  const page = await unlockedAtSettings();
  // The first try fails at its last step, the encrypted databases' deletes: one of them is made to fail.
  await page.evaluate(() => {
    const original = IDBFactory.prototype.deleteDatabase;
    let failed = false;
    IDBFactory.prototype.deleteDatabase = function (name: string) {
      if (name !== "demo-memory-locked" || failed) return original.call(this, name);
      failed = true;
      const request = {} as IDBOpenDBRequest;
      setTimeout(() => request.onerror?.(new Event("error")), 0);
      return request;
    };
  });
  await page.getByTestId("remove-lock").click();
  await page.getByTestId("confirm-remove-lock").click();
  await page.getByRole("status").filter({ hasText: "Could not remove the lock" }).waitFor({ timeout: 30_000 });
  // Without this second Yes (a reload instead), the next start opens the conversation whole.
  await page.getByTestId("confirm-remove-lock").click();
  await expect.poll(() => migrating(page), { timeout: 30_000 }).toBe(false);
  await page.close();
  expect(await transcriptLeft()).toContain("user: kept thread");
});

test("a second removal on the same session while the first runs is refused, and the conversation kept; Cancel is held meanwhile", async () => {
  const page = await unlockedAtSettings();
  await page.getByTestId("remove-lock").click();
  await page.getByTestId("confirm-remove-lock").waitFor();
  // The UI no longer lets a second removal start while one runs (Cancel is held); the session refuses one
  // anyway: it is called twice here, the second waiting for the first's migration lock, as a second click did.
  // (A string, so that Vitest leaves the page's dynamic import alone.)
  await page.evaluate(`(async () => {
    const { Session } = await import("/e2e/internals.js");
    const unlockForGood = Session.prototype.unlockForGood;
    Session.prototype.unlockForGood = function () {
      Session.prototype.unlockForGood = unlockForGood;
      const first = unlockForGood.call(this);
      globalThis.secondRemoval = unlockForGood.call(this).then(() => "done", (error) => error.message);
      return first;
    };
  })()`);
  await page.getByTestId("confirm-remove-lock").click();
  // Read in one go in the page: the removal may end, and the question go, between a count and a read.
  const cancelHeld = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLButtonElement>("dialog.settings button")]
      .filter((button) => button.textContent === "Cancel")
      .every((button) => button.disabled),
  );
  expect(cancelHeld).toBe(true);
  await expect
    .poll(() => page.evaluate(() => (globalThis as { secondRemoval?: Promise<string> }).secondRemoval), {
      timeout: 30_000,
    })
    .toMatch(/lock changed already/);
  await expect.poll(() => migrating(page), { timeout: 30_000 }).toBe(false);
  await page.close();
  expect(await transcriptLeft()).toContain("user: kept thread");
});
