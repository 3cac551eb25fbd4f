/**
 * Settings: the passphrase lock (the vault) and the model choice.
 *
 * Locking stores a random salt and a sealed check value in the demo's
 * database, never the passphrase. The key is derived with PBKDF2 (600,000
 * rounds) by `EncryptedSerializer.fromPassphrase`; the same serializer
 * encrypts the saver, the store, and the demo's own texts (thread titles,
 * model and sync settings).
 *
 * Whoever can write the browser profile's files can plant rows in the demo's
 * database. So a locked vault opens only what it sealed itself: every text is
 * AES-GCM sealed with its place (store, key, field) as associated data, so a
 * plain text, or a sealed one moved to another row, is refused; and the lock
 * row's KDF parameters are checked against a fixed floor before anything is
 * derived from them.
 */
import { DecryptionError, EncryptedSerializer } from "./lib.js";
import type { DemoDB, LockRow, StoredText } from "./threads-db.js";

/**
 * Where a text is stored: the demo database's store and key, and the field
 * (e.g. `["threads", id, "title"]`). Sealed texts are bound to it.
 */
export type Place = readonly (string | number)[];

/** The place of a thread's title. */
export const titlePlace = (threadId: string): Place => ["threads", threadId, "title"];
/** The place of a thread's custom instructions. */
export const instructionsPlace = (threadId: string): Place => ["threads", threadId, "instructions"];
/** The place of a JSON setting (`model`, `sync`). */
export const settingPlace = (key: string): Place => ["settings", key, "value"];

/** Seals and opens texts that come from the conversation. */
export interface Vault {
  readonly locked: boolean;
  /** The serializer for the saver and the store; undefined: plain. */
  readonly serde?: EncryptedSerializer;
  /** The lock's salt: which lock this vault opens (undefined: plain). */
  readonly salt?: Uint8Array;
  seal(text: string, place: Place): Promise<StoredText>;
  /** The text stored at `place`; a locked vault refuses anything it did not seal for that place. */
  open(stored: StoredText, place: Place): Promise<string>;
}

/**
 * A text in a locked vault that this vault did not seal for its place: a
 * plain text, or one moved from another row. It is refused, never used.
 */
export class UnsealedTextError extends Error {
  override name = "UnsealedTextError";
}

/** Where LangGraph's data lives, by lock state (the two never mix). */
export const DATABASES = {
  plain: { saver: "demo-checkpoints", store: "demo-memory" },
  locked: { saver: "demo-checkpoints-locked", store: "demo-memory-locked" },
} as const;

export function databasesOf(vault: Vault) {
  return vault.locked ? DATABASES.locked : DATABASES.plain;
}

/** The vault of an unlocked app: texts stay as they are. */
export const plainVault: Vault = {
  locked: false,
  seal: async (text) => text,
  open: async (stored) => {
    if (typeof stored !== "string") throw new Error("This text is encrypted: unlock first.");
    return stored;
  },
};

/** The shortest passphrase {@link createLock} accepts. */
export const MIN_PASSPHRASE_LENGTH = 10;
/**
 * PBKDF2 rounds of every lock. Fixed, not read from the lock row: a row
 * asking for fewer would make a planted (or copied) vault cheap to guess.
 */
export const LOCK_ITERATIONS = 600_000;
/** The rounds in force: {@link LOCK_ITERATIONS}, unless a test lowered them ({@link setLockRoundsForTests}). */
let lockIterations = LOCK_ITERATIONS;

/**
 * The PBKDF2 rounds this page derives every lock's key with, and the only count a lock row may ask for:
 * {@link LOCK_ITERATIONS}, bar a test's {@link setLockRoundsForTests}.
 */
export function lockRounds(): number {
  return lockIterations;
}

/** `EncryptedSerializer.fromPassphrase`'s options for a lock's key from `salt`, at {@link lockRounds}. */
export function lockKdf(salt: Uint8Array) {
  return { salt, iterations: lockIterations, insecureTestOnlyWeakKdf: lockIterations !== LOCK_ITERATIONS };
}

/**
 * Tests only: this page's locks derive (and expect) `rounds` instead of {@link LOCK_ITERATIONS} until the
 * returned function puts the rounds before back, so that browser tests run the lock's own code at a
 * millisecond a key instead of a tenth of a second. A module's state, reached by code in the page only: no
 * address, storage or setting sets it. A lock row written so asks for other rounds than the app's, which
 * the app refuses ({@link lockRowProblem}).
 */
export function setLockRoundsForTests(rounds: number): () => void {
  if (!Number.isSafeInteger(rounds) || rounds < 1) throw new RangeError(`PBKDF2 rounds: ${rounds}`);
  const before = lockIterations;
  lockIterations = rounds;
  return () => void (lockIterations = before);
}
/** The lock row's format: v2 seals every text bound to its place. */
export const LOCK_VERSION = 2;
const SALT_BYTES = 16;
const CHECK_TEXT = "langgraph-demo:vault-check:v2";
/** Every place is inside the demo's database: its name leads the associated data. */
const PLACE_ROOT = "langgraph-demo";
const decoder = new TextDecoder();

function encryptedVault(serde: EncryptedSerializer, salt: Uint8Array): Vault {
  return {
    locked: true,
    serde,
    salt,
    async seal(text, place) {
      const [type, data] = await serde.dumpsTypedForRow(text, [PLACE_ROOT, ...place]);
      return { type, data };
    },
    async open(stored, place) {
      if (typeof stored === "string" || typeof stored?.type !== "string" || !(stored.data instanceof Uint8Array))
        throw new UnsealedTextError(`Refused ${place.join("/")}: it is not sealed by your passphrase.`);
      let value: unknown;
      try {
        value = await serde.loadsTypedForRow(stored.type, stored.data, [PLACE_ROOT, ...place]);
      } catch (error) {
        if (error instanceof DecryptionError)
          throw new UnsealedTextError(
            `Refused ${place.join("/")}: it was not sealed for this place by your passphrase.`,
          );
        throw error;
      }
      return typeof value === "string" ? value : decoder.decode(value as Uint8Array);
    },
  };
}

/** The check value's place: bound to the salt too, so a check can't move to another lock. */
function checkPlace(salt: Uint8Array): Place {
  return [
    "settings",
    "lock",
    "check",
    lockIterations,
    Array.from(salt, (b) => b.toString(16).padStart(2, "0")).join(""),
  ];
}

/** The salt of a new lock for `passphrase`, once it is long enough. */
export function newLockSalt(passphrase: string): Uint8Array {
  if (passphrase.length < MIN_PASSPHRASE_LENGTH)
    throw new Error(`Use a passphrase of at least ${MIN_PASSPHRASE_LENGTH} characters.`);
  return crypto.getRandomValues(new Uint8Array(SALT_BYTES));
}

/** A new lock: a fresh salt, the derived key, and the record to keep. */
export async function createLock(passphrase: string): Promise<{ vault: Vault; row: LockRow }> {
  const salt = newLockSalt(passphrase);
  return lockFor(await EncryptedSerializer.fromPassphrase(passphrase, lockKdf(salt)), salt);
}

/** The vault of a key derived from `salt`, and its lock row in this app's format. */
export async function lockFor(serde: EncryptedSerializer, salt: Uint8Array): Promise<{ vault: Vault; row: LockRow }> {
  const vault = encryptedVault(serde, salt);
  const check = await vault.seal(CHECK_TEXT, checkPlace(salt));
  const row: LockRow = { key: "lock", v: LOCK_VERSION, salt, iterations: lockIterations, check };
  return { vault, row };
}

/** Thrown by {@link unlock} when the passphrase does not open the check value. */
export class WrongPassphraseError extends Error {
  override name = "WrongPassphraseError";
}

/**
 * Thrown by {@link unlock} (with any passphrase) for a lock row this app did
 * not write: another version, other KDF parameters, a plain check value.
 */
export class InvalidLockError extends Error {
  override name = "InvalidLockError";
}

/** Why a lock row can't be trusted, or undefined when it has this app's shape. */
export function lockRowProblem(lock: LockRow): string | undefined {
  if (lock.v !== LOCK_VERSION) return `it is not in this app's format, version ${LOCK_VERSION}`;
  if (lock.iterations !== lockIterations)
    return `it asks for ${String(lock.iterations)} PBKDF2 rounds instead of ${lockIterations}`;
  if (!(lock.salt instanceof Uint8Array) || lock.salt.length !== SALT_BYTES) return "its salt is not 16 bytes";
  if (typeof lock.check === "string" || !(lock.check?.data instanceof Uint8Array))
    return "its check value is not sealed";
  return undefined;
}

/**
 * Throws {@link InvalidLockError} for a lock row this app did not write, and {@link WrongPassphraseError} for
 * an empty passphrase: call it before any key is derived from the row's parameters.
 */
export function checkLockRow(lock: LockRow, passphrase: string): void {
  const problem = lockRowProblem(lock);
  if (problem)
    throw new InvalidLockError(
      `This lock record was not written by this app (${problem}), so it is not used. Erase all data to start again.`,
    );
  if (!passphrase) throw new WrongPassphraseError("Enter your passphrase.");
}

/** Derives the key from the passphrase and proves it on the check value. */
export async function unlock(lock: LockRow, passphrase: string): Promise<Vault> {
  // Refused before any key is derived from its parameters, whatever the passphrase.
  checkLockRow(lock, passphrase);
  return openLock(lock, await EncryptedSerializer.fromPassphrase(passphrase, lockKdf(lock.salt)));
}

/** The vault of `serde` once it opens the lock row's check value; else {@link WrongPassphraseError}. */
export async function openLock(lock: LockRow, serde: EncryptedSerializer): Promise<Vault> {
  const vault = encryptedVault(serde, lock.salt);
  try {
    if ((await vault.open(lock.check, checkPlace(lock.salt))) === CHECK_TEXT) return vault;
  } catch (error) {
    // The wrong key fails to open the check value; anything else is a real error.
    if (!(error instanceof UnsealedTextError)) throw error;
  }
  throw new WrongPassphraseError("That passphrase is not right.");
}

/**
 * A JSON setting as stored. A missing row gives `fallback`; a locked vault's
 * row it did not seal for this place throws {@link UnsealedTextError} (the
 * caller reports it and uses `fallback`): a planted endpoint is never used.
 */
export async function loadSetting<T extends object>(
  db: DemoDB,
  vault: Vault,
  key: "model" | "sync",
  fallback: T,
): Promise<T> {
  const row = await db.settings.get(key);
  if (!row || row.key !== key) return { ...fallback };
  const text = await vault.open(row.value, settingPlace(key));
  try {
    return { ...fallback, ...(JSON.parse(text) as Partial<T>) };
  } catch {
    return { ...fallback };
  }
}

/** A refused setting ({@link UnsealedTextError}) is reported in `problems`, and `fallback` used instead. */
export async function refusing<T>(load: Promise<T>, what: string, fallback: T, problems: string[]): Promise<T> {
  try {
    return await load;
  } catch (error) {
    if (!(error instanceof UnsealedTextError)) throw error;
    problems.push(
      `The ${what} stored in this browser were not sealed with your passphrase (something else wrote them), so they were not used: the defaults apply. Check them in Settings.`,
    );
    return fallback;
  }
}

/** Seals a JSON setting for its place. */
export async function settingRow<K extends "model" | "sync">(vault: Vault, key: K, value: object) {
  return { key, value: await vault.seal(JSON.stringify(value), settingPlace(key)) };
}

/** Which model answers. */
export interface ModelSettings {
  provider: "local" | "openai";
  /** OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or http://localhost:11434/v1. */
  baseUrl: string;
  model: string;
  apiKey: string;
}

export const DEFAULT_MODEL_SETTINGS: ModelSettings = {
  provider: "local",
  baseUrl: "https://api.openai.com/v1",
  model: "gpt-4o-mini",
  apiKey: "",
};

export function loadModelSettings(db: DemoDB, vault: Vault): Promise<ModelSettings> {
  return loadSetting(db, vault, "model", DEFAULT_MODEL_SETTINGS);
}

export async function saveModelSettings(db: DemoDB, vault: Vault, settings: ModelSettings): Promise<void> {
  await db.settings.put(await settingRow(vault, "model", settings));
}
