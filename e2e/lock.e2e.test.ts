/**
 * The passphrase lock: once locked, nothing the user types is stored in
 * plaintext in any IndexedDB database of the page (threads written before
 * the lock included); the next load asks for the passphrase, rejects a
 * wrong one and opens everything with the right one.
 */
import { readFile } from "node:fs/promises";
import { expect, test } from "vitest";
import {
  clockedPage,
  lockWith,
  PASSPHRASE,
  plaintextHits,
  ready,
  screenshot,
  send,
  transcript,
  useHarness,
  threadAction,
} from "./support.js";

// Each test on empty storage, in the page the test before had (its renderer kept: e2e/support.ts, `cleanPage`).
const harness = useHarness({ cleanPage: true });

test("lock: no plaintext at rest, wrong passphrase refused, right one opens", async () => {
  const before = `early-${Math.random().toString(36).slice(2, 10)}`;
  const after = `secret-${Math.random().toString(36).slice(2, 10)}`;
  const passphrase = PASSPHRASE;
  const page = await harness().page();
  await ready(page);

  // Unlocked, the saver keeps plaintext: the scan sees it (so it can see).
  await send(page, `my note ${before}`);
  expect((await plaintextHits(page, before)).length).toBeGreaterThan(0);
  // The thread's custom instructions are its texts too.
  const instructions = `instructions-${Math.random().toString(36).slice(2, 10)}`;
  await threadAction(page.locator(".thread-item.current"), "Instructions");
  await page.getByTestId("instructions-input").fill(instructions);
  await page.getByTestId("instructions-save").click();
  await page.getByTestId("instructions-note").waitFor();

  // A deleted thread must not trip the migration.
  await page.getByTestId("new-thread").click();
  await send(page, "short-lived thread");
  const doomed = page.locator(".thread-item", { hasText: "short-lived thread" });
  await threadAction(doomed, "Delete");
  await doomed.getByRole("button", { name: /^Confirm: delete/ }).click();
  await expect.poll(() => page.getByTestId("thread").count()).toBe(1);

  await page.getByTestId("settings").click();
  await page.getByTestId("passphrase").fill(passphrase);
  await page.getByTestId("passphrase-again").fill(passphrase);
  await page.getByTestId("lock").click();
  await expect.poll(() => page.getByTestId("lock").count(), { timeout: 30_000 }).toBe(0);
  await page.keyboard.press("Escape");

  // A new thread, written after the lock.
  await page.getByTestId("new-thread").click();
  await send(page, `the marker is ${after}`);
  expect(await plaintextHits(page, after)).toEqual([]);
  // The thread from before the lock was re-encrypted, its plaintext deleted; its instructions sealed.
  expect(await plaintextHits(page, before)).toEqual([]);
  expect(await plaintextHits(page, instructions)).toEqual([]);
  // A half-typed message is kept across the reload and the lock screen, sealed: not in the tab's storage as typed.
  const draft = `draft-${Math.random().toString(36).slice(2, 10)}`;
  await page.getByTestId("composer").fill(`unsent ${draft}`);
  await expect.poll(() => page.evaluate(() => Object.keys(sessionStorage).length)).toBeGreaterThan(0);
  expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(draft);

  await page.reload();
  await page.getByTestId("unlock-passphrase").waitFor();
  expect(await page.getByTestId("composer").count()).toBe(0);
  await screenshot(page, "lock");
  await page.getByTestId("unlock-passphrase").fill("wrong passphrase");
  await page.getByTestId("unlock").click();
  await page.getByTestId("unlock-error").waitFor();
  await screenshot(page, "lock-error");
  expect(await page.getByTestId("composer").count()).toBe(0);

  await page.getByTestId("unlock-passphrase").fill(passphrase);
  await page.getByTestId("unlock-passphrase").press("Enter");
  await ready(page);
  await expect.poll(() => transcript(page)).toContain(`user: the marker is ${after}`);
  expect(await page.getByTestId("unlock-error").count()).toBe(0);
  expect(await page.getByTestId("composer").inputValue()).toBe(`unsent ${draft}`);

  // The older thread came along, the deleted one did not.
  await expect.poll(() => page.getByTestId("thread").count()).toBe(2);
  await page.getByTestId("thread").filter({ hasText: before }).click();
  await expect.poll(() => transcript(page)).toContain(`user: my note ${before}`);
  await expect.poll(() => page.getByTestId("instructions-text").textContent()).toBe(instructions);
  // And the session keeps working, still encrypted.
  await send(page, `more ${after}`);
  expect(await plaintextHits(page, after)).toEqual([]);
  // An export is a plain file (it imports anywhere): Settings says so beside the Export buttons of a locked app.
  await page.getByTestId("settings").click();
  expect(await page.getByTestId("export-note").textContent()).toMatch(/not encrypted/);
  // The export itself says it is done, and, the app being locked, that the file it wrote is plain.
  const download = page.waitForEvent("download");
  await page
    .locator("table.storage tbody tr", { hasText: after })
    .getByRole("button", { name: /^Export/ })
    .click();
  const file = await (await download).path();
  expect((await readFile(file)).includes(after)).toBe(true);
  await expect
    .poll(() => page.getByTestId("export-status").textContent())
    .toMatch(/^Exported “the marker is secret-\w+” to .+\.lgthread\. The file is not encrypted/);
});

test("change the passphrase, remove the lock; erasing asks first", async () => {
  const page = await harness().page();
  await ready(page);
  await send(page, "kept through every change");
  await page.getByTestId("settings").click();
  // Typed twice, or not locked: there is no recovery from a typo.
  await page.getByTestId("passphrase").fill("first passphrase");
  await page.getByTestId("passphrase-again").fill("first passphrasf");
  await page.getByTestId("lock").click();
  await page.getByText("The two passphrases differ").waitFor();
  expect(await page.evaluate(() => document.activeElement?.id)).toBe("passphrase-again");
  expect(await page.getByRole("status").filter({ hasText: "The two passphrases differ" }).count()).toBe(1);
  await page.getByTestId("passphrase-again").fill("first passphrase");
  await page.getByTestId("lock").click();
  await page.getByTestId("new-passphrase").waitFor({ timeout: 30_000 });

  // Not without the passphrase in use: someone at an unlocked screen cannot lock the owner out.
  await page.getByTestId("current-passphrase").fill("not the passphrase");
  await page.getByTestId("new-passphrase").fill("second passphrase");
  await page.getByTestId("new-passphrase-again").fill("second passphrase");
  await page.getByTestId("change-passphrase").click();
  await page.getByText("That passphrase is not right.").waitFor({ timeout: 30_000 });
  // The focus goes back to the field to fix, not to the page.
  expect(await page.evaluate(() => document.activeElement?.id)).toBe("current-passphrase");
  await page.getByTestId("current-passphrase").fill("first passphrase");
  await page.getByTestId("change-passphrase").click();
  await page.getByText("Passphrase changed.").waitFor({ timeout: 30_000 });
  expect(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid)).toBe(
    "change-passphrase",
  );
  await screenshot(page, "settings-locked");
  await page.keyboard.press("Escape");
  await send(page, "after the change");

  await page.reload();
  await page.getByTestId("unlock-passphrase").fill("first passphrase");
  await page.getByTestId("unlock").click();
  await page.getByTestId("unlock-error").waitFor();
  await page.getByTestId("unlock-passphrase").fill("second passphrase");
  await page.getByTestId("unlock").click();
  await ready(page);
  await expect.poll(() => transcript(page)).toHaveLength(4);
  expect((await transcript(page))[0]).toBe("user: kept through every change");

  // Remove the lock: asked twice; Escape takes the question back.
  await page.getByTestId("settings").click();
  await page.getByTestId("remove-lock").click();
  await page.getByTestId("confirm-remove-lock").waitFor();
  await page.keyboard.press("Escape");
  await expect.poll(() => page.getByTestId("confirm-remove-lock").count()).toBe(0);
  expect(await page.locator("dialog.settings").evaluate((d) => (d as HTMLDialogElement).open)).toBe(true);
  await page.getByTestId("remove-lock").click();
  // A removal that fails (once, here: made to) says why, and may be tried again or cancelled. (A string,
  // so that Vitest leaves the page's dynamic import alone.)
  await page.evaluate(`(async () => {
    const { Session } = await import("/e2e/internals.js");
    const unlockForGood = Session.prototype.unlockForGood;
    Session.prototype.unlockForGood = function () {
      Session.prototype.unlockForGood = unlockForGood;
      return Promise.reject(new Error("the disk is full"));
    };
  })()`);
  await page.getByTestId("confirm-remove-lock").click();
  const failed = page.getByRole("status").filter({ hasText: "Could not remove the lock: the disk is full" });
  await failed.waitFor();
  expect(await page.getByTestId("confirm-remove-lock").isEnabled()).toBe(true);
  // The focus is on Cancel, as when first asked, not lost to the page.
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel");
  await screenshot(page, "remove-lock-failed");
  await page.getByTestId("confirm-remove-lock").click();
  await page.getByTestId("passphrase").waitFor({ timeout: 30_000 });
  await page.keyboard.press("Escape");
  await page.reload();
  await ready(page);
  await expect.poll(() => transcript(page)).toHaveLength(4);
  expect(await page.getByTestId("thread").first().textContent()).toContain("kept through every change");

  // Lock again, then "Forgot your passphrase?": erasing asks first, and Escape cancels.
  await lockWith(page, "third passphrase");
  await page.reload();
  await page.getByText("Forgot your passphrase?").click();
  await page.getByTestId("erase").click();
  await page.getByTestId("confirm-erase").waitFor();
  await screenshot(page, "erase-confirm");
  await page.keyboard.press("Escape");
  await expect.poll(() => page.getByTestId("confirm-erase").count()).toBe(0);
  await page.getByTestId("erase").click();
  await page.getByTestId("confirm-erase").click();
  await ready(page);
  await expect.poll(() => transcript(page)).toEqual([]);
  expect(await page.getByTestId("thread").count()).toBe(0);
});

test("Lock now locks every open tab; erasing everything on one tab's lock screen empties the other tabs too", async () => {
  const a = await harness().page();
  await ready(a);
  await send(a, "seen in two tabs");
  const b = await harness().page();
  await ready(b);
  // A draft typed in b while unlocked is kept as typed; once the app is locked it is neither opened nor left so.
  await b.getByTestId("composer").fill("typed before the lock");
  await expect.poll(() => b.evaluate(() => JSON.stringify(sessionStorage))).toContain("typed before the lock");
  await lockWith(a, "a passphrase for two tabs");
  // Locking with a passphrase sends the other tab to its lock screen, which says why; unlocked there, both are open.
  await expect.poll(() => b.getByTestId("lock-reason").textContent()).toBe("The lock was changed in another tab.");
  // Not kept as typed while b waits at its lock screen either (the app is locked: nothing plain at rest).
  expect(await b.evaluate(() => JSON.stringify(sessionStorage))).not.toContain("typed before the lock");
  await b.getByTestId("unlock-passphrase").fill("a passphrase for two tabs");
  await b.getByTestId("unlock-passphrase").press("Enter");
  await ready(b);
  await expect.poll(() => b.evaluate(() => JSON.stringify(sessionStorage))).not.toContain("typed before the lock");
  // Lock now in one tab: the other leaves the conversation for the lock screen too.
  await a.getByRole("button", { name: "Lock now" }).click();
  await a.getByTestId("unlock-passphrase").waitFor({ timeout: 30_000 });
  await b.getByTestId("unlock-passphrase").waitFor({ timeout: 30_000 });
  expect(await b.getByTestId("composer").count()).toBe(0);
  expect(await b.getByTestId("lock-reason").textContent()).toBe("Locked from another tab.");
  // The tab that locked itself needs no reason; and a reason is said once, not at the next start.
  expect(await a.getByTestId("lock-reason").count()).toBe(0);
  await b.reload();
  await b.getByTestId("unlock-passphrase").waitFor();
  expect(await b.getByTestId("lock-reason").count()).toBe(0);

  // Erasing everything on one tab's lock screen empties the other tabs too. Tab A unlocks; tab B sits on its
  // lock screen (reloaded), and erases everything.
  await a.getByTestId("unlock-passphrase").fill("a passphrase for two tabs");
  await a.getByTestId("unlock-passphrase").press("Enter");
  await ready(a);
  await expect.poll(() => transcript(a)).toHaveLength(2);
  await b.getByText("Forgot your passphrase?").click();
  await b.getByTestId("erase").click();
  await b.getByTestId("confirm-erase").click();
  await ready(b);
  await expect.poll(() => transcript(b)).toEqual([]);
  // A does not go on showing (and writing to) what was erased: it starts again, empty, and says why.
  await expect.poll(() => transcript(a), { timeout: 30_000 }).toEqual([]);
  expect(await a.getByTestId("thread").count()).toBe(0);
  await send(a, "after the erase");
  await expect.poll(() => transcript(b), { timeout: 30_000 }).toHaveLength(2);
}, 180_000);

test("a locked app locks itself again after the chosen idle time, not while used", async () => {
  const page = await clockedPage(harness(), "before auto-lock");
  await page.getByTestId("settings").click();
  await page.getByTestId("passphrase").fill("a passphrase for auto-lock");
  await page.getByTestId("passphrase-again").fill("a passphrase for auto-lock");
  await page.getByTestId("lock").click();
  await page.getByTestId("auto-lock").waitFor({ timeout: 30_000 });
  await page.getByTestId("auto-lock").selectOption("5");
  await page.keyboard.press("Escape");

  // Four minutes idle, some input, four more: still open (input restarts the wait).
  await page.clock.fastForward("04:00");
  await page.getByTestId("composer").click();
  await page.clock.fastForward("04:00");
  expect(await page.getByTestId("unlock-passphrase").count()).toBe(0);
  // Five minutes without input: the unlock screen, and the conversation only after the passphrase.
  await page.clock.fastForward("05:01");
  await page.getByTestId("unlock-passphrase").waitFor({ timeout: 30_000 });
  expect(await page.getByTestId("lock-reason").textContent()).toContain("without input");
  await screenshot(page, "auto-locked");
  await page.getByTestId("unlock-passphrase").fill("a passphrase for auto-lock");
  await page.getByTestId("unlock-passphrase").press("Enter");
  await expect.poll(() => transcript(page), { timeout: 30_000 }).toHaveLength(2);
}, 120_000);
