/**
 * How the app starts: a lock change cut short is finished first; then the
 * plain vault opens at once, or the lock screen asks for the passphrase (and
 * offers to erase everything). Apart from the App, which it never sees: it
 * hands the opened session to the `start` it is given.
 */
import { clearDrafts, dropPlainDrafts } from "./drafts.js";
import { Session, deleteDatabase } from "./session.js";
import { DATABASES, plainVault } from "./settings.js";
import type { DemoDB } from "./threads-db.js";
import { h } from "./ui/dom.js";
import { createLockScreen, createMissingLockScreen } from "./ui/lock.js";
import { unlockVault } from "./session-lock.js";
import { takeLockReason } from "./lock-now.js";
import { finishPendingDeletes, lockedDataWithoutLock } from "./vault-migration.js";

/** Deletes every database of the app: the saver's and store's of both vaults, then the demo's own. */
export async function eraseEverything(db: DemoDB): Promise<void> {
  await Promise.all(
    Object.values(DATABASES).flatMap((names) => [deleteDatabase(names.saver), deleteDatabase(names.store)]),
  );
  await db.delete();
  // The drafts of this tab too (the composer's, the approval cards').
  if (typeof sessionStorage !== "undefined") clearDrafts();
}

/**
 * Opens the vault into `root` (the lock screen first, when the app is
 * locked) and calls `start` with its session.
 */
export async function boot(db: DemoDB, root: HTMLElement, start: (session: Session) => Promise<void>): Promise<void> {
  // A lock change cut short (the tab closed) is finished before anything else.
  await finishPendingDeletes(db, () =>
    root.replaceChildren(h("p", { class: "boot" }, "Finishing the lock: close the app's other tabs…")),
  );
  const lock = await db.lock();
  // Said by the lock screen only: a start that opens without one forgets it all the same.
  const reason = takeLockReason();
  const erase = async () => {
    await eraseEverything(db);
    location.reload();
  };
  if (!lock) {
    const orphaned = await lockedDataWithoutLock();
    if (orphaned.length === 0) return start(await Session.open(db, plainVault));
    root.replaceChildren(createMissingLockScreen({ erase, retry: () => location.reload() }));
    return;
  }
  // Locked: a draft this tab typed unlocked (before another tab locked the app) is not left plain at rest.
  if (typeof sessionStorage !== "undefined") dropPlainDrafts();
  root.replaceChildren(
    createLockScreen({
      unlock: async (passphrase) => {
        // A lock of the first format is upgraded, a passphrase change cut short settled (session-lock.ts).
        const { vault, problems } = await unlockVault(db, lock, passphrase);
        const session = await Session.open(db, vault);
        session.problems.push(...problems);
        await start(session);
      },
      erase,
      reason,
    }),
  );
}
