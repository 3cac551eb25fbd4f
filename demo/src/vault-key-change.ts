/**
 * A passphrase change that a closed tab, a crash or a failed write cannot turn into a lockout.
 *
 * A change re-keys three databases that commit apart: the saver's, the store's (`changeKey`), then the
 * demo's own (its sealed texts and the lock record, in one transaction). Each passphrase derives only its
 * own lock's key, from its own salt; so, cut between them and reloaded, the lock record named one key while
 * the saver held the other, and the data opened with neither passphrase. Hence, before the first
 * `changeKey`, the change is recorded ({@link KeyChangeRow}, key "key-change"): both lock rows (salt and
 * check value) and each lock's key, the raw PBKDF2 output, sealed (AES-GCM, bound to its place and both
 * salts) by the other's key. Whichever passphrase is typed then reaches both keys. The record is deleted in
 * the transaction that writes the final lock record (session-lock.ts `storeTexts`), whose check value is
 * sealed anew ({@link committedLock}): a record kept and put back later names no lock record, so it is stale
 * (else it would let the passphrase the change replaced open the app again, and undo the change).
 *
 * At unlock, a record one of whose rows is the lock record means a change was cut short. The passphrase is
 * proved on that row or on the other, opens the other key, and that key must open its own row's check
 * value too, before anything is written (a planted record cannot seal for the user's passphrase). The
 * change is then settled toward the passphrase just typed (session-lock.ts `settleKeyChange`): the new one
 * finishes it, the old one undoes it. Either way the user needs next what they have just proved they know;
 * after a change the page reported as failed they type the old one, and finishing then would make them
 * need one typed once in a dialog that said it failed. Settling is `changeKey` on each database, which
 * resumes across the cut: a database whose key record the target key already opens has its rotation
 * finished, not a re-wrap; one still under the other key is re-wrapped from it. Then the texts, each opened
 * with either key, are sealed again, and the lock record is written with the record deleted, together.
 *
 * An older build ignores the record: it opens the lock record as before, and where the saver was already
 * re-keyed its first read fails (DecryptionError) before it writes anything; the record stays for this
 * build, which settles it. A record neither of whose rows is the lock record (left by an older build that
 * changed the passphrase again, or planted) is stale: deleted once the passphrase is proved.
 */
import { EncryptedSerializer } from "./lib.js";
import {
  UnsealedTextError,
  WrongPassphraseError,
  checkLockRow,
  lockFor,
  lockRounds,
  lockRowProblem,
  newLockSalt,
  openLock,
  unlock,
  type Place,
  type Vault,
} from "./settings.js";
import type { DemoDB, KeyChangeRow, LockRow } from "./threads-db.js";

/** A lock with its key: the vault, its lock row, and the key's raw bits (to seal for the other lock). */
export interface LockKey {
  readonly vault: Vault;
  readonly row: LockRow;
  readonly bits: Uint8Array;
}

/** A change cut short, as the passphrase typed opens it: the lock it proved, the other, and which is new. */
export interface CutChange {
  readonly proved: LockKey;
  readonly other: LockKey;
  /** The proved lock is the change's new one: settling finishes the change (else it undoes it). */
  readonly finishes: boolean;
}

const KEY = "key-change";
const encoder = new TextEncoder();
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const unhex = (text: string) => Uint8Array.from(text.match(/../g) ?? [], (pair) => parseInt(pair, 16));

/** The key's raw bits: PBKDF2 as `EncryptedSerializer.fromPassphrase` runs it (its AES-256 key is these bits). */
async function keyBits(passphrase: string, salt: Uint8Array): Promise<Uint8Array> {
  const input = encoder.encode(passphrase.normalize("NFC"));
  const material = await crypto.subtle.importKey("raw", input, "PBKDF2", false, ["deriveBits"]);
  const params = { name: "PBKDF2", hash: "SHA-256", salt: new Uint8Array(salt), iterations: lockRounds() };
  return new Uint8Array(await crypto.subtle.deriveBits(params, material, 256));
}

/** `bits` as the key of `row`, proved on its check value (else WrongPassphraseError). */
async function keyOf(row: LockRow, bits: Uint8Array): Promise<LockKey> {
  return { vault: await openLock(row, await EncryptedSerializer.fromRawKey(bits)), row, bits };
}

/** `passphrase` proved on `row` as `unlock` proves it (InvalidLockError, WrongPassphraseError), with the key's bits. */
export async function provenKey(row: LockRow, passphrase: string): Promise<LockKey> {
  checkLockRow(row, passphrase);
  return keyOf(row, await keyBits(passphrase, row.salt));
}

/** A new lock for `passphrase` (refused when too short, as `createLock` does), with its key's bits. */
export async function newLockKey(passphrase: string): Promise<LockKey> {
  const salt = newLockSalt(passphrase);
  const bits = await keyBits(passphrase, salt);
  return { ...(await lockFor(await EncryptedSerializer.fromRawKey(bits), salt)), bits };
}

/**
 * The lock row to commit for `key` when a change (or its settling) ends: its check value sealed anew, so the
 * row differs from both of the change's rows. A record of that change put back later (kept by someone who
 * knows the passphrase it replaced) then names neither the lock record nor its own rows: it is stale.
 */
export async function committedLock(key: LockKey): Promise<LockRow> {
  return (await lockFor(key.vault.serde!, key.row.salt)).row;
}

/** Where a lock's sealed key is kept: bound to both salts, so it cannot be moved to another change. */
function keyPlace(field: "toKey" | "fromKey", change: { from: LockRow; to: LockRow }): Place {
  return ["settings", KEY, field, hex(change.from.salt), hex(change.to.salt)];
}

/** The record of a change from `from` to `to`, to keep before the first database changes key. */
export async function keyChangeRow(from: LockKey, to: LockKey): Promise<KeyChangeRow> {
  const sides = { from: from.row, to: to.row };
  return {
    key: KEY,
    v: 1,
    ...sides,
    toKey: await from.vault.seal(hex(to.bits), keyPlace("toKey", sides)),
    fromKey: await to.vault.seal(hex(from.bits), keyPlace("fromKey", sides)),
  };
}

/** The same lock row: salt and check value (a sealed check is unique to its sealing). */
function sameLock(a: LockRow | undefined, b: LockRow): boolean {
  const id = (row: LockRow | undefined) =>
    row?.salt instanceof Uint8Array && typeof row.check === "object" && row.check?.data instanceof Uint8Array
      ? `${hex(row.salt)}:${hex(row.check.data)}`
      : undefined;
  return id(a) !== undefined && id(a) === id(b);
}

/** In the shape this app writes: both rows lock rows it would take, both keys sealed. */
function wellFormed(change: KeyChangeRow | undefined): change is KeyChangeRow {
  const lockRow = (row: unknown) => typeof row === "object" && row !== null && !lockRowProblem(row as LockRow);
  const sealed = (text: unknown) =>
    typeof (text as { type?: unknown } | null)?.type === "string" &&
    (text as { data?: unknown }).data instanceof Uint8Array;
  return (
    change?.v === 1 && lockRow(change.from) && lockRow(change.to) && sealed(change.toKey) && sealed(change.fromKey)
  );
}

/**
 * The record of a change of `lock` cut short, if there is one. A stale record is not, nor one in another
 * shape (edited, truncated): its rows would otherwise fail a mistyped passphrase as an invalid lock, or
 * every passphrase on a missing field.
 */
export async function changeOf(db: DemoDB, lock: LockRow): Promise<KeyChangeRow | undefined> {
  const change = (await db.settings.get(KEY)) as KeyChangeRow | undefined;
  return wellFormed(change) && (sameLock(change.from, lock) || sameLock(change.to, lock)) ? change : undefined;
}

/**
 * Proves `passphrase` on the lock record, or, when a change of it was cut short, on either of the
 * change's locks (a wrong one fails with WrongPassphraseError, as `unlock`). Writes nothing but, once the
 * passphrase is proved, the removal of a stale change record.
 */
export async function unlockChanging(
  db: DemoDB,
  lock: LockRow,
  passphrase: string,
): Promise<{ vault: Vault; cut?: CutChange }> {
  const change = await changeOf(db, lock);
  if (!change) {
    const vault = await unlock(lock, passphrase);
    if (await db.settings.get(KEY)) await db.settings.delete(KEY);
    return { vault };
  }
  const [here, there] = sameLock(change.from, lock) ? [change.from, change.to] : [change.to, change.from];
  const onRecord = await provenKey(here, passphrase).catch((error: unknown) => {
    if (error instanceof WrongPassphraseError) return undefined;
    throw error;
  });
  // Not the lock record's passphrase: the change's other one, or none (its row is only proved by its key).
  const proved = onRecord ?? (await provenKey(there, passphrase));
  const otherRow = proved.row === change.from ? change.to : change.from;
  const sealed = proved.row === change.from ? change.toKey : change.fromKey;
  const place = keyPlace(proved.row === change.from ? "toKey" : "fromKey", change);
  const other = await proved.vault
    .open(sealed, place)
    .then((text) => keyOf(otherRow, unhex(text)))
    .catch((error: unknown) => {
      if (error instanceof UnsealedTextError || error instanceof WrongPassphraseError) return undefined;
      throw error;
    });
  if (!other) {
    // Not sealed by the user's key: not this app's record. The lock record's passphrase opens as usual.
    if (!onRecord) throw new WrongPassphraseError("That passphrase is not right.");
    await db.settings.delete(KEY);
    return { vault: onRecord.vault };
  }
  return { vault: proved.vault, cut: { proved, other, finishes: proved.row === change.to } };
}

/**
 * Runs `work` holding the passphrase-change lock (Web Locks, across tabs): a change from its check for an
 * earlier change's record to its end, or the settling of one, runs alone. Two tabs changing at once each
 * found no record and wrote their own, the second over the first's; with the first's saver re-keyed and
 * its change cut, the record left named a key no database was on, and nothing opened.
 */
export async function withKeyChangeLock<T>(work: () => Promise<T>): Promise<T> {
  // Awaited: TypeScript 5's DOM types give `request` a `Promise<Promise<T>>` here (7's, `Promise<T>`).
  return await navigator.locks.request("langgraph-demo:key-change", work);
}

/** A vault that seals with `first`, and opens what `first` or `second` sealed (a change's two keys). */
export function eitherVault(first: Vault, second: Vault): Vault {
  return {
    ...first,
    open: (stored, place) =>
      first.open(stored, place).catch((error: unknown) => {
        if (error instanceof UnsealedTextError) return second.open(stored, place);
        throw error;
      }),
  };
}
