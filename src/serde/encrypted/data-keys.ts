/**
 * The data keys of an encrypted database, under its key-encryption key (the
 * KEK, `EncryptedSerializer`'s own key): checking a key record was wrapped
 * by this KEK, unwrapping its data keys into a keyring, making a fresh one,
 * and the serializer a database's rows are sealed with. Stateless functions
 * of the KEK; index.ts holds the KEK and calls them. The key record's format
 * is docs/encryption.md's ("Keys").
 */
import type { RowBoundSerializer, RowRef } from "../protocol.js";
import { IV_BYTES, generateAesKey, keyId, randomBytes, unwrapAesKey, wrapAesKey } from "./webcrypto.js";
import { DecryptionError } from "../../core/errors.js";
import { toHex, fromHex } from "../../core/bytes.js";
import {
  BIND_CONTEXT,
  BIND_ROW,
  type Keyring,
  type SealOptions,
  type SealingKey,
  open,
  seal,
  wrapAad,
} from "./envelope.js";
import { type AesGcmKeyRecord, type WrappedDataKey, ringOf } from "./key-record.js";

/** `kek` (the serializer's own key, as a sealing key), after checking `record` was wrapped by it. */
export function checkKek(kek: SealingKey, record: AesGcmKeyRecord): SealingKey {
  if (record.kek !== kek.hex) {
    throw new DecryptionError(
      `Wrong passphrase or key: this database's data key is locked by key ${record.kek}, and this EncryptedSerializer's key is ${kek.hex}. Nothing was read. Check the passphrase (or key), and that the salt and iterations are the ones the database was created with.`,
    );
  }
  return kek;
}

/** Unwraps one data key of a record wrapped by `kek`. */
export async function unwrapDataKey(kek: SealingKey, entry: WrappedDataKey, extractable: boolean): Promise<CryptoKey> {
  try {
    return await unwrapAesKey(kek.key, entry.wrapped, entry.iv, wrapAad(kek.id, fromHex(entry.id)), extractable);
  } catch (error) {
    throw new DecryptionError(
      "Wrong passphrase or key: the database's data key does not unwrap with this EncryptedSerializer's key (or the key record was altered). Nothing was read.",
      { cause: error },
    );
  }
}

/** Unwraps every data key of `record` into a keyring, checking each one's id. */
export async function openRecord(kek: SealingKey, record: AesGcmKeyRecord): Promise<Keyring> {
  const ours = checkKek(kek, record);
  const keys = await Promise.all(
    record.keys.map(async (entry): Promise<SealingKey> => {
      const key = await unwrapDataKey(ours, entry, false);
      const id = await keyId(key);
      if (toHex(id) !== entry.id) {
        throw new DecryptionError(
          "This database's encryption key record is inconsistent (a data key's id does not match): it was altered.",
        );
      }
      return { id, hex: entry.id, key };
    }),
  );
  return ringOf(keys);
}

/**
 * A fresh data key, wrapped under `kek`, ahead of `retired` (entries and
 * their unwrapped keys), as a record and a ring.
 */
export async function newDataKey(
  kek: SealingKey,
  retired: readonly WrappedDataKey[],
  retiredKeys: readonly SealingKey[],
): Promise<{ record: AesGcmKeyRecord; ring: Keyring }> {
  // Extractable only so wrapKey accepts it; the copy we use is unwrapped non-extractable.
  const dek = await generateAesKey(true);
  const id = await keyId(dek);
  const iv = randomBytes(IV_BYTES);
  const entry: WrappedDataKey = {
    id: toHex(id),
    iv,
    wrapped: await wrapAesKey(kek.key, dek, iv, wrapAad(kek.id, id)),
    created: Date.now(),
  };
  const usable = await unwrapDataKey(kek, entry, false);
  const record: AesGcmKeyRecord = { kind: "aes-gcm", v: 1, kek: kek.hex, keys: [entry, ...retired] };
  return { record, ring: ringOf([{ id, hex: entry.id, key: usable }, ...retiredKeys]) };
}

/**
 * The serializer `forDatabase` hands to IndexedDBSaver/IndexedDBStore: rows
 * sealed with the database's data key, opened with any of its keys.
 */
export class DatabaseSerializer implements RowBoundSerializer {
  readonly #ring: Keyring;
  readonly #options: SealOptions;

  /** A serializer sealing with `ring`'s current key and opening with any of its keys. */
  constructor(ring: Keyring, options: SealOptions) {
    this.#ring = ring;
    this.#options = options;
  }

  /** Seals `value` bound to the options' fixed context. */
  dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    return seal(this.#ring, this.#options, value, { kind: BIND_CONTEXT, context: this.#options.context });
  }

  /** Opens a value sealed by {@link dumpsTyped}. */
  loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    return open(this.#ring, this.#options, type, data, { kind: BIND_CONTEXT, context: this.#options.context });
  }

  /** Seals `value` bound to `row`. */
  dumpsTypedForRow(value: unknown, row: RowRef): Promise<[string, Uint8Array]> {
    return seal(this.#ring, this.#options, value, { kind: BIND_ROW, row });
  }

  /** Opens a value sealed for `row`; sealed for any other row, it fails. */
  loadsTypedForRow(type: string, data: Uint8Array | string, row: RowRef): Promise<unknown> {
    return open(this.#ring, this.#options, type, data, { kind: BIND_ROW, row });
  }
}
