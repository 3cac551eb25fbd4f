/**
 * `EncryptedSerializer`: a `SerializerProtocol` that encrypts what an inner
 * serializer produces with AES-GCM (WebCrypto), for any LangGraph.js
 * checkpoint saver, and with two extras when it serves IndexedDBSaver or
 * IndexedDBStore (through serde/protocol.ts): every value is bound to its
 * row, and rows are encrypted under a random data key (DEK) kept wrapped
 * under the serializer's key (the KEK) in the database.
 *
 * The envelope's bytes, the associated data, the key record and the IV
 * budget are specified once, in docs/encryption.md ("Formats" and "Keys");
 * the golden files freeze them. Here: a new passphrase re-wraps the DEK
 * (`rewrapFor`), no row changes; a new DEK (`beginRekey`/`endRekey`, driven
 * by `rekeyDatabase` in serde/rekey.ts) re-encrypts rows.
 *
 * What lives in serde/encrypted/: this serializer (index.ts), the envelope
 * and its associated data (envelope.ts), key records and the keyring
 * (key-record.ts), the database's data keys under this serializer's key and
 * the serializer its rows are sealed with (data-keys.ts), and stateless
 * WebCrypto calls (webcrypto.ts). It imports serde/protocol.ts,
 * serde/msgpack/ and core/.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { DatabaseBinding, DatabaseInfo, KeyRecord, RowBoundSerializer, RowRef } from "../protocol.js";
import type { DataKeyRotation, RekeyableSerializer, RewrappableSerializer } from "../rekey.js";
import { IV_BYTES, deriveAesKey, generateAesKey, importAesKey, keyId, randomBytes, wrapAesKey } from "./webcrypto.js";
import { DecryptionError } from "../../core/errors.js";
import { utf8, toHex, fromBase64, fromHex, isUint8Array } from "../../core/bytes.js";
import {
  BIND_CONTEXT,
  BIND_ROW,
  DEFAULT_PBKDF2_ITERATIONS,
  type Keyring,
  type SealOptions,
  open,
  seal,
  wrapAad,
} from "./envelope.js";
import {
  MIN_PBKDF2_ITERATIONS,
  MIN_SALT_BYTES,
  type EncryptedSerializerOptions,
  type PassphraseOptions,
} from "./options.js";
import {
  type AesGcmKeyRecord,
  type WrappedDataKey,
  parseRecord,
  resolveOptions,
  rewriterOf,
  ringOf,
} from "./key-record.js";
import { DatabaseSerializer, checkKek, newDataKey, openRecord, unwrapDataKey } from "./data-keys.js";

export {
  AES_GCM_SUFFIX,
  DEFAULT_PBKDF2_ITERATIONS,
  ENVELOPE_VERSION,
  inspectEnvelope,
  type EnvelopeInfo,
} from "./envelope.js";
export type { AesGcmKeyRecord, WrappedDataKey } from "./key-record.js";
export type { EncryptedSerializerOptions, PassphraseOptions } from "./options.js";

// ------------------------------------------------------------------ serializers

/**
 * Encrypts every value of a LangGraph.js checkpoint saver or store with
 * AES-GCM-256 (WebCrypto), around an inner serializer. Works with savers
 * that store its bytes and type tag unchanged (MemorySaver; the official JS
 * PostgresSaver breaks with it); with IndexedDBSaver and IndexedDBStore it also binds
 * each value to its row and keeps a wrapped data key in the database, so a
 * wrong passphrase fails at open and a passphrase change re-encrypts nothing.
 *
 * Fails closed: plaintext, another scheme's ciphertext, a wrong key, a value
 * moved to another row and any flipped bit are all `DecryptionError`, never
 * garbage (plaintext can be let through with `allowPlaintext` for migration).
 *
 * The threat model (what this protects against in a browser, and what it
 * does not) is in docs/encryption.md.
 *
 * @example
 * ```ts
 * const serde = await EncryptedSerializer.fromPassphrase(passphrase, { salt: "my-app:user-42:kdf-salt" }); // salt: 16 bytes or more
 * const checkpointer = new IndexedDBSaver({ dbName: "my-app", serde });
 *
 * // Or a key the page can use but never read, kept in IndexedDB itself:
 * const key = await EncryptedSerializer.generateKey();
 * const serde2 = EncryptedSerializer.fromKey(key);
 *
 * // Any other saver (values bound to a fixed context instead of rows):
 * const memory = new MemorySaver(serde);
 * ```
 */
export class EncryptedSerializer implements RowBoundSerializer, RewrappableSerializer, RekeyableSerializer {
  /** The key-encryption key; seals values itself when no database key is in use. */
  readonly #kek: CryptoKey;
  readonly #options: SealOptions;
  #ring: Promise<Keyring> | undefined;

  /** Use the static factories: they check and prepare the key. */
  private constructor(kek: CryptoKey, options: SealOptions) {
    this.#kek = kek;
    this.#options = options;
  }

  /**
   * A serializer whose key is derived from a passphrase with
   * PBKDF2-HMAC-SHA256 (600,000 rounds by default). The same passphrase,
   * salt and rounds give the same key in any browser or Node. The passphrase
   * is Unicode-normalized (NFC) first, so it types the same on every device.
   *
   * @param passphrase A non-empty string.
   * @param options `salt` (required, at least 16 bytes), `iterations` (at
   *   least 100,000), and the common options.
   */
  static async fromPassphrase(passphrase: string, options: PassphraseOptions): Promise<EncryptedSerializer> {
    if (typeof passphrase !== "string" || passphrase === "") {
      throw new TypeError("EncryptedSerializer.fromPassphrase: the passphrase must be a non-empty string.");
    }
    const {
      salt,
      iterations = DEFAULT_PBKDF2_ITERATIONS,
      insecureTestOnlyWeakKdf = false,
    } = options ?? ({} as PassphraseOptions);
    const saltBytes = typeof salt === "string" ? utf8(salt) : isUint8Array(salt) ? salt : undefined;
    if (!saltBytes || saltBytes.length === 0) {
      throw new TypeError(
        "EncryptedSerializer.fromPassphrase: `salt` is required, a non-empty string or Uint8Array. Use 16 random bytes per user or database, stored next to the data (it is not secret), e.g. crypto.getRandomValues(new Uint8Array(16)).",
      );
    }
    if (!Number.isSafeInteger(iterations) || iterations < 1) {
      throw new TypeError(
        `EncryptedSerializer.fromPassphrase: \`iterations\` must be a positive integer (default ${DEFAULT_PBKDF2_ITERATIONS}).`,
      );
    }
    if (!insecureTestOnlyWeakKdf && saltBytes.length < MIN_SALT_BYTES) {
      throw new TypeError(
        `EncryptedSerializer.fromPassphrase: \`salt\` is ${saltBytes.length} bytes; use at least ${MIN_SALT_BYTES} (16 random bytes per user or database, stored next to the data: crypto.getRandomValues(new Uint8Array(16))).`,
      );
    }
    if (!insecureTestOnlyWeakKdf && iterations < MIN_PBKDF2_ITERATIONS) {
      throw new TypeError(
        `EncryptedSerializer.fromPassphrase: \`iterations\` is ${iterations}; use at least ${MIN_PBKDF2_ITERATIONS} (default ${DEFAULT_PBKDF2_ITERATIONS}). Fewer rounds make passphrases cheap to guess from a copied database; tests may pass \`insecureTestOnlyWeakKdf: true\`.`,
      );
    }
    const resolved = resolveOptions(options);
    const kek = await deriveAesKey(utf8(passphrase.normalize("NFC")), saltBytes, iterations);
    return new EncryptedSerializer(kek, resolved);
  }

  /**
   * A serializer from raw key bytes, for Node, workers and tests: the
   * counterpart of Python's `LANGGRAPH_AES_KEY`. 16 or 32 bytes (AES-128 or
   * AES-256); 24-byte AES-192 keys are refused because Chromium has no
   * AES-192. A string is read as base64 (standard or URL-safe). Python reads
   * `LANGGRAPH_AES_KEY` as the raw UTF-8 bytes of the string; to use the same
   * key, pass `new TextEncoder().encode(process.env.LANGGRAPH_AES_KEY)`.
   * (The data format is not Python's either way: AES-GCM, not EAX.)
   *
   * @param key The key: bytes, or their base64.
   * @param options The common options.
   */
  static async fromRawKey(
    key: Uint8Array | ArrayBuffer | string,
    options?: EncryptedSerializerOptions,
  ): Promise<EncryptedSerializer> {
    const raw =
      typeof key === "string"
        ? fromBase64(key)
        : key instanceof ArrayBuffer
          ? new Uint8Array(key)
          : isUint8Array(key)
            ? key
            : undefined;
    if (!raw)
      throw new TypeError("EncryptedSerializer.fromRawKey: pass a Uint8Array, an ArrayBuffer or a base64 string.");
    if (raw.length !== 16 && raw.length !== 32) {
      throw new TypeError(
        `EncryptedSerializer.fromRawKey: an AES key is 16 or 32 bytes, got ${raw.length}${raw.length === 24 ? " (AES-192 is not supported: Chromium's WebCrypto lacks it)" : ""}. Make one with crypto.getRandomValues(new Uint8Array(32)).`,
      );
    }
    const resolved = resolveOptions(options);
    return new EncryptedSerializer(await importAesKey(raw), resolved);
  }

  /**
   * A serializer for an existing WebCrypto key: an AES-GCM `CryptoKey` with
   * `encrypt` and `decrypt` usages (and `wrapKey`/`unwrapKey`, to keep the
   * data key's bytes inside WebCrypto; without them it is wrapped through
   * `encrypt`). Typically one made by {@link EncryptedSerializer.generateKey}
   * and kept in IndexedDB.
   *
   * @param key The key; it may be non-extractable.
   * @param options The common options.
   */
  static fromKey(key: CryptoKey, options?: EncryptedSerializerOptions): EncryptedSerializer {
    const algorithm = (key as { algorithm?: { name?: string } } | null)?.algorithm;
    if (typeof key !== "object" || key === null || algorithm?.name !== "AES-GCM" || key.type !== "secret") {
      throw new TypeError(
        `EncryptedSerializer.fromKey: expected an AES-GCM CryptoKey, got ${algorithm?.name ?? typeof key}. Make one with EncryptedSerializer.generateKey().`,
      );
    }
    if (!key.usages.includes("encrypt") || !key.usages.includes("decrypt")) {
      throw new TypeError(
        `EncryptedSerializer.fromKey: the key needs the "encrypt" and "decrypt" usages (it has ${key.usages.join(", ") || "none"}).`,
      );
    }
    return new EncryptedSerializer(key, resolveOptions(options));
  }

  /**
   * A new random AES-GCM-256 key, non-extractable: the page can use it but
   * never read its bytes. A `CryptoKey` survives structured clone, so it can
   * be stored in IndexedDB as is and survives reloads:
   *
   * ```ts
   * let key = await idbKeyval.get("key");
   * if (!key) await idbKeyval.set("key", (key = await EncryptedSerializer.generateKey()));
   * const serde = EncryptedSerializer.fromKey(key);
   * ```
   *
   * Anyone who can read the origin's storage can use it too (it is next to
   * the data): it protects against copying the database elsewhere, not
   * against code running in the page. See docs/encryption.md.
   */
  static generateKey(): Promise<CryptoKey> {
    return generateAesKey(false);
  }

  /** The key id (hex) of this serializer's own key, as its envelopes and key records name it. */
  async keyId(): Promise<string> {
    return (await this.#kekRing()).current.hex;
  }

  /** The KEK as a one-key ring, for values sealed without a database key. */
  #kekRing(): Promise<Keyring> {
    this.#ring ??= keyId(this.#kek).then((id) => ringOf([{ id, hex: toHex(id), key: this.#kek }]));
    return this.#ring;
  }

  /** Serializes with the inner serializer and encrypts under this serializer's key, bound to the fixed `context`. */
  async dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    return seal(await this.#kekRing(), this.#options, value, { kind: BIND_CONTEXT, context: this.#options.context });
  }

  /** Decrypts a value from {@link dumpsTyped} and deserializes it. */
  async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    return open(await this.#kekRing(), this.#options, type, data, {
      kind: BIND_CONTEXT,
      context: this.#options.context,
    });
  }

  /** Like `dumpsTyped`, bound to `row` instead of the fixed context. */
  async dumpsTypedForRow(value: unknown, row: RowRef): Promise<[string, Uint8Array]> {
    return seal(await this.#kekRing(), this.#options, value, { kind: BIND_ROW, row });
  }

  /** Like `loadsTyped`, for a value written by `dumpsTypedForRow(…, row)`; any other row fails. */
  async loadsTypedForRow(type: string, data: Uint8Array | string, row: RowRef): Promise<unknown> {
    return open(await this.#kekRing(), this.#options, type, data, { kind: BIND_ROW, row });
  }

  /**
   * The serializer for one database. On a fresh database (`stored`
   * undefined), makes a random data key and returns it wrapped, as the
   * record to keep. Otherwise unwraps the stored data keys; a wrong
   * passphrase or key fails here with `DecryptionError`, before any row is
   * read.
   */
  async forDatabase(stored: KeyRecord | undefined, database?: DatabaseInfo): Promise<DatabaseBinding> {
    if (stored === undefined) {
      // A key record removed from a database that holds values must not be
      // silently replaced by a new key (unless migrating from plaintext).
      if (!this.#options.allowPlaintext && (await database?.populated())) {
        throw new DecryptionError(
          `IndexedDB database "${database!.name}" holds values but has no encryption key record: it was removed or lost (restore it from a backup). A new key was not made. To encrypt a database written without encryption, open it with allowPlaintext: true.`,
        );
      }
      const { record, ring } = await newDataKey((await this.#kekRing()).current, [], []);
      return { serde: new DatabaseSerializer(ring, this.#options), record };
    }
    const ring = await openRecord((await this.#kekRing()).current, parseRecord(stored));
    return { serde: new DatabaseSerializer(ring, this.#options) };
  }

  /** The id of the data key new values are sealed under in a database whose key record is `stored`. */
  sealingKeyId(stored: KeyRecord): string {
    return parseRecord(stored).keys[0]!.id;
  }

  /**
   * The stored key record re-wrapped under `next`'s key: a passphrase or key
   * change that re-encrypts no row. Fails with `DecryptionError` if this
   * serializer's key does not open `stored`, and checks that `next` opens
   * the result before returning it.
   *
   * @param stored The database's current key record.
   * @param next An EncryptedSerializer with the new passphrase or key.
   */
  async rewrapFor(stored: KeyRecord, next: SerializerProtocol): Promise<KeyRecord> {
    if (!(next instanceof EncryptedSerializer)) {
      throw new TypeError(
        "Changing the key of an encrypted database needs another EncryptedSerializer. To stop encrypting, copy the threads into a new database with a plain serializer.",
      );
    }
    const record = parseRecord(stored);
    const ours = checkKek((await this.#kekRing()).current, record);
    const theirs = (await next.#kekRing()).current.id;
    const keys = await Promise.all(
      record.keys.map(async (entry): Promise<WrappedDataKey> => {
        const dekId = fromHex(entry.id);
        const dek = await unwrapDataKey(ours, entry, true);
        const iv = randomBytes(IV_BYTES);
        return {
          id: entry.id,
          iv,
          wrapped: await wrapAesKey(next.#kek, dek, iv, wrapAad(theirs, dekId)),
          created: entry.created,
        };
      }),
    );
    const rewrapped: AesGcmKeyRecord = { kind: "aes-gcm", v: 1, kek: toHex(theirs), keys };
    await openRecord((await next.#kekRing()).current, rewrapped);
    return rewrapped;
  }

  /**
   * Starts replacing the database's data key: a record whose first key is a
   * fresh data key and whose others are the old ones (still read), and the
   * function that re-encrypts one value under the new key. After an
   * interrupted rekey too: its keys all become old ones.
   */
  async beginRekey(stored: KeyRecord | undefined): Promise<DataKeyRotation> {
    if (stored === undefined) {
      const { record, ring } = await newDataKey((await this.#kekRing()).current, [], []);
      return { record, rewrite: rewriterOf(ring, this.#options) };
    }
    const record = parseRecord(stored);
    const kek = (await this.#kekRing()).current;
    const ring = await openRecord(kek, record);
    // Even when resuming, a fresh key: the order of the record's keys is not
    // sealed, so "the first one is the new one" may be an edit that puts a
    // retired (perhaps leaked) key back in front.
    const next = await newDataKey(kek, record.keys, [...ring.byId.values()]);
    return { record: next.record, rewrite: rewriterOf(next.ring, this.#options) };
  }

  /** Ends a rekey: the record with only its current data key, once no row uses the others. */
  async endRekey(stored: KeyRecord): Promise<KeyRecord> {
    const record = parseRecord(stored);
    await openRecord((await this.#kekRing()).current, record);
    return { kind: "aes-gcm", v: 1, kek: record.kek, keys: [record.keys[0]!] } satisfies AesGcmKeyRecord;
  }
}
