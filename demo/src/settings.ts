/**
 * Settings: the passphrase lock (the vault) and the model choice.
 *
 * Locking stores a random salt and a sealed check value in the demo's
 * database, never the passphrase. The key is derived with PBKDF2 (600,000
 * rounds, the package default) by `EncryptedSerializer.fromPassphrase`; the
 * same serializer encrypts the saver, the store, and the demo's own texts
 * (thread titles, model settings).
 */
import { DecryptionError, EncryptedSerializer } from "./lib.js";
import type { DemoDB, LockRow, StoredText } from "./threads-db.js";

/** Seals and opens texts that come from the conversation. */
export interface Vault {
  readonly locked: boolean;
  /** The serializer for the saver and the store; undefined: plain. */
  readonly serde?: EncryptedSerializer;
  /** The lock's salt: which lock this vault opens (undefined: plain). */
  readonly salt?: Uint8Array;
  seal(text: string): Promise<StoredText>;
  open(stored: StoredText): Promise<string>;
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

const CHECK_TEXT = "langgraph-demo:vault-check:v1";
const decoder = new TextDecoder();

function encryptedVault(serde: EncryptedSerializer, salt: Uint8Array): Vault {
  return {
    locked: true,
    serde,
    salt,
    async seal(text) {
      const [type, data] = await serde.dumpsTyped(text);
      return { type, data };
    },
    async open(stored) {
      if (typeof stored === "string") return stored;
      const value = await serde.loadsTyped(stored.type, stored.data);
      return typeof value === "string" ? value : decoder.decode(value as Uint8Array);
    },
  };
}

/** A new lock: a fresh salt, the derived key, and the record to keep. */
export async function createLock(passphrase: string): Promise<{ vault: Vault; row: LockRow }> {
  if (passphrase.length < 4) throw new Error("Use a passphrase of at least 4 characters.");
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const serde = await EncryptedSerializer.fromPassphrase(passphrase, { salt });
  const vault = encryptedVault(serde, salt);
  const row: LockRow = { key: "lock", salt, iterations: 600_000, check: await vault.seal(CHECK_TEXT) };
  return { vault, row };
}

/** Thrown by {@link unlock} when the passphrase does not open the check value. */
export class WrongPassphraseError extends Error {
  override name = "WrongPassphraseError";
}

/** Derives the key from the passphrase and proves it on the check value. */
export async function unlock(lock: LockRow, passphrase: string): Promise<Vault> {
  if (!passphrase) throw new WrongPassphraseError("Enter your passphrase.");
  const serde = await EncryptedSerializer.fromPassphrase(passphrase, { salt: lock.salt, iterations: lock.iterations });
  const vault = encryptedVault(serde, lock.salt);
  try {
    if ((await vault.open(lock.check)) === CHECK_TEXT) return vault;
  } catch (error) {
    // The wrong key fails to open the check value; anything else is a real error.
    if (!(error instanceof DecryptionError)) throw error;
  }
  throw new WrongPassphraseError("That passphrase is not right.");
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

export async function loadModelSettings(db: DemoDB, vault: Vault): Promise<ModelSettings> {
  const row = await db.settings.get("model");
  if (!row || row.key !== "model") return { ...DEFAULT_MODEL_SETTINGS };
  try {
    return { ...DEFAULT_MODEL_SETTINGS, ...(JSON.parse(await vault.open(row.value)) as Partial<ModelSettings>) };
  } catch {
    return { ...DEFAULT_MODEL_SETTINGS };
  }
}

export async function saveModelSettings(db: DemoDB, vault: Vault, settings: ModelSettings): Promise<void> {
  await db.settings.put({ key: "model", value: await vault.seal(JSON.stringify(settings)) });
}
