/**
 * The app's side of a lock change: moving to the session a change made in
 * Settings returns (also one that committed and then left the old databases
 * behind), and starting over at the lock screen when another tab changed the
 * lock record. Functions of the {@link LockHost} they are given (the App is one).
 */
import { lockIdentity, reloadLocked } from "./lock-now.js";
import { OldDataLeftError, type Session } from "./session.js";
import type { DemoDB, ThreadRow } from "./threads-db.js";

/** What a lock change needs of the app. */
export interface LockHost {
  readonly db: DemoDB;
  /** A lock change of this tab is going on: the lock record's changes meanwhile are its own. */
  locking: boolean;
  /** The lock this tab runs under ({@link lockIdentity} of its salt). */
  knownLock: string;
  /** Makes `session` the app's, sealing the drafts again for its vault. */
  attach(session: Session): void;
  showThreads(rows: ThreadRow[]): Promise<void>;
  /** Reads the open thread again and draws it. */
  refresh(): Promise<void>;
}

/**
 * Moves to the session a lock change returns (lock, new passphrase, unlock for good), also when the change
 * committed and then could not delete the old databases (OldDataLeftError): the app goes on with the new
 * session, and that error, saying what was left, is thrown after.
 */
export async function replaceSession(app: LockHost, change: () => Promise<Session>): Promise<void> {
  app.locking = true;
  try {
    const { next, left } = await change().then(
      (next) => ({ next, left: undefined }),
      (error: unknown) => {
        if (error instanceof OldDataLeftError) return { next: error.session as Session, left: error };
        throw error;
      },
    );
    app.knownLock = lockIdentity(next.vault.salt);
    app.attach(next);
    await app.showThreads(await app.db.threads.orderBy("updatedAt").reverse().toArray());
    await app.refresh();
    if (left) throw left;
  } finally {
    app.locking = false;
  }
}

/** Another tab locked the app, or erased it (the lock record changed, not by this tab): start over from the lock screen. */
export function watchLockRecord(app: LockHost): void {
  app.db.liveLock().subscribe({
    next: (row) => {
      if (!app.locking && lockIdentity(row?.salt) !== app.knownLock)
        reloadLocked("The lock was changed in another tab.");
    },
    error: (e: unknown) => console.warn("lock query", e),
  });
}
