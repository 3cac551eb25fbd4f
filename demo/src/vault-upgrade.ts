/**
 * Locks written before texts were bound to their place (lock rows without
 * `v`: the first format, "v1"). Such a vault is the user's own data, so it
 * is upgraded, not refused: the passphrase opens its check value, every
 * sealed text is opened the old way and sealed again bound to its place, and
 * the lock row is rewritten in this app's format, all in one transaction.
 *
 * What a v1 row may be is narrow, so the upgrade opens no door the v2 checks
 * close: the fixed PBKDF2 rounds and a 16-byte salt (a cheap planted row is
 * still refused), and a sealed check value (a planted row can't be opened by
 * the user's passphrase, since nobody else could seal for it). A plain text
 * found during the upgrade was not sealed by the vault: it is dropped (a
 * setting falls back to its default, a title reads "(unreadable title)") and
 * reported. What v1 could not tell apart, a sealed text moved to another row
 * before the upgrade, stays as it was found.
 */
import { DecryptionError, EncryptedSerializer } from "./lib.js";
import {
  lockFor,
  lockKdf,
  lockRounds,
  settingPlace,
  titlePlace,
  WrongPassphraseError,
  type Vault,
} from "./settings.js";
import type { DemoDB, LockRow, StoredText } from "./threads-db.js";

/** The check text of v1 locks. */
const V1_CHECK_TEXT = "langgraph-demo:vault-check:v1";
/** Settings that v1 sealed. */
const SEALED_SETTINGS = ["model", "sync"] as const;
/** The title given to a thread whose v1 title was not sealed. */
export const UNREADABLE_TITLE = "(unreadable title)";

const decoder = new TextDecoder();

/** Whether `lock` is a lock row of the first format that this app upgrades. */
export function isV1Lock(lock: LockRow): boolean {
  return (
    lock.v === undefined &&
    lock.iterations === lockRounds() &&
    lock.salt instanceof Uint8Array &&
    lock.salt.length === 16 &&
    typeof lock.check !== "string" &&
    lock.check?.data instanceof Uint8Array
  );
}

/**
 * Opens a v1 vault with `passphrase` and upgrades it (see the module
 * comment). Returns the vault and what was dropped, in words.
 */
export async function upgradeV1Lock(
  db: DemoDB,
  lock: LockRow,
  passphrase: string,
): Promise<{ vault: Vault; problems: string[] }> {
  if (!passphrase) throw new WrongPassphraseError("Enter your passphrase.");
  const serde = await EncryptedSerializer.fromPassphrase(passphrase, lockKdf(lock.salt));
  /** A v1 text, or undefined when it was not sealed (or not by this key). */
  const openV1 = async (stored: StoredText | undefined): Promise<string | undefined> => {
    if (stored === undefined || typeof stored === "string") return undefined;
    try {
      const value = await serde.loadsTyped(stored.type, stored.data);
      return typeof value === "string" ? value : decoder.decode(value as Uint8Array);
    } catch (error) {
      if (error instanceof DecryptionError) return undefined;
      throw error;
    }
  };
  if ((await openV1(lock.check)) !== V1_CHECK_TEXT) throw new WrongPassphraseError("That passphrase is not right.");

  const { vault, row } = await lockFor(serde, lock.salt);
  const problems: string[] = [];
  // Everything is opened and sealed before the transaction: it holds only the writes.
  const threads = await Promise.all(
    (await db.threads.toArray()).map(async (thread) => {
      const title = await openV1(thread.title);
      if (title === undefined) problems.push(`The title of a thread was not sealed by your passphrase.`);
      return { ...thread, title: await vault.seal(title ?? UNREADABLE_TITLE, titlePlace(thread.id)) };
    }),
  );
  const settings = await Promise.all(
    SEALED_SETTINGS.map(async (key) => {
      const stored = await db.settings.get(key);
      if (!stored || !("value" in stored)) return { key, value: undefined };
      const text = await openV1(stored.value as StoredText);
      if (text === undefined)
        problems.push(`The ${key} settings were not sealed by your passphrase: the defaults apply.`);
      return { key, value: text === undefined ? undefined : await vault.seal(text, settingPlace(key)) };
    }),
  );
  await db.transaction("rw", db.threads, db.settings, async () => {
    await db.threads.bulkPut(threads);
    for (const { key, value } of settings) {
      if (value === undefined) await db.settings.delete(key);
      else await db.settings.put({ key, value });
    }
    await db.settings.put(row);
  });
  return { vault, problems };
}
