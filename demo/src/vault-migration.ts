/**
 * The lock migration's last step, made resumable: deleting the databases
 * the other lock state left behind (the plain ones after a lock, the
 * encrypted ones after removing it).
 *
 * The names to delete are written as a pending marker in the same
 * transaction as the lock record change. A tab closed before the deletes
 * finish leaves the marker, and every start finishes them before anything
 * else. A delete blocked by another tab's open connection is waited for, not
 * assumed done; the marker goes only once the databases are gone.
 *
 * Lock, unlock-for-good and these deletes hold one Web Lock, so a tab that
 * starts mid-migration in another tab waits for it instead of deleting
 * databases that are being filled.
 */
import { DATABASES } from "./settings.js";
import type { DemoDB, PendingDeletesRow } from "./threads-db.js";

const MIGRATION_LOCK = "langgraph-demo:vault-migration";

/** Runs `work` while no other tab of the app is migrating. */
export async function withMigrationLock<T>(work: () => Promise<T>): Promise<T> {
  return await navigator.locks.request(MIGRATION_LOCK, work);
}

/** The databases of this origin that exist now. */
export async function existingDatabases(): Promise<Set<string>> {
  return new Set((await indexedDB.databases()).flatMap((info) => (info.name ? [info.name] : [])));
}

/**
 * Deletes a database and resolves once it is gone. While another connection
 * holds it open the request waits (`onBlocked` is told, e.g. to ask for
 * other tabs to close); it is never taken as done before `success`.
 */
export function deleteDatabase(name: string, onBlocked?: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error ?? new Error(`Could not delete the database ${name}.`));
    request.onblocked = () => onBlocked?.();
  });
}

/** The marker row: these databases are to be deleted. */
export function pendingDeletes(names: readonly string[]): PendingDeletesRow {
  return { key: "pending-deletes", names: [...names] };
}

/**
 * Deletes `names` (those that exist) and the marker's databases, then drops
 * the marker. Call it holding the migration lock.
 */
export async function runPendingDeletes(
  db: DemoDB,
  names: readonly string[] = [],
  onBlocked?: () => void,
): Promise<void> {
  const marker = (await db.settings.get("pending-deletes")) as PendingDeletesRow | undefined;
  const wanted = new Set([...names, ...(Array.isArray(marker?.names) ? marker.names : [])]);
  // Never the demo's own database (a planted marker must not erase the lock and titles).
  wanted.delete(db.name);
  const existing = await existingDatabases();
  for (const name of wanted) if (existing.has(name)) await deleteDatabase(name, onBlocked);
  const left = await existingDatabases();
  const stuck = [...wanted].filter((name) => left.has(name));
  if (stuck.length > 0) throw new Error(`Could not delete ${stuck.join(", ")}; it is retried on the next start.`);
  if (marker) await db.settings.delete("pending-deletes");
}

/** At start: finishes a migration a closed tab left half done. */
export function finishPendingDeletes(db: DemoDB, onBlocked?: () => void): Promise<void> {
  return withMigrationLock(() => runPendingDeletes(db, [], onBlocked));
}

/**
 * The encrypted databases that exist while the demo's database has no lock
 * record. A lock row deleted (by hand, a profile edit, a cleaner) must not
 * open the app into plain databases beside the encrypted ones: what the user
 * typed next would be stored unencrypted. A lock change cut short leaves none
 * (its copies are marked for deletion until the lock record changes).
 */
export async function lockedDataWithoutLock(): Promise<string[]> {
  const existing = await existingDatabases();
  return Object.values(DATABASES.locked).filter((name) => existing.has(name));
}

/** Unlocked with the right passphrase, but the encrypted databases are gone: nothing is opened or made anew. */
export class MissingVaultDataError extends Error {
  override name = "MissingVaultDataError";
}

/**
 * Before a locked session opens its databases: they must exist (opening
 * would make empty ones and silently replace the data), and no plain copy
 * may remain (a lock, or a removal of it, cut short).
 */
export function prepareLockedOpen(db: DemoDB): Promise<void> {
  return withMigrationLock(async () => {
    const existing = await existingDatabases();
    const missing = Object.values(DATABASES.locked).filter((name) => !existing.has(name));
    if (missing.length > 0)
      throw new MissingVaultDataError(
        `The passphrase is right, but the encrypted data is missing (${missing.join(", ")}). Nothing was opened. Erase all data to start again.`,
      );
    await runPendingDeletes(db, Object.values(DATABASES.plain));
  });
}
