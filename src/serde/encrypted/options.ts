/**
 * The options of `EncryptedSerializer`'s factories and the limits
 * `fromPassphrase` enforces. Apart from the serializer so that key records
 * (key-record.ts) can read the options without importing the serializer.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";

/** Options shared by every factory of `EncryptedSerializer`. */
export interface EncryptedSerializerOptions {
  /** The serializer whose output is encrypted. Default: a new `MsgpackSerializer`. */
  serde?: SerializerProtocol;
  /**
   * Read values that were stored unencrypted (their type has no `+aes-gcm`)
   * instead of failing with `DecryptionError`. Only for migrating data
   * written before encryption was turned on: while it is set, anyone who can
   * write to the storage can plant plaintext values. New values are always
   * encrypted.
   */
  allowPlaintext?: boolean;
  /**
   * What `dumpsTyped`/`loadsTyped` bind values to (the associated data), for
   * savers that do not name rows (MemorySaver, the official server savers).
   * Such savers can only get a fixed context: a value moved between their
   * rows still decrypts. Default `""`. Values written with one context do not
   * read with another, so separate apps sharing a key can keep apart.
   */
  context?: string;
}

/** Options of `EncryptedSerializer.fromPassphrase`. */
export interface PassphraseOptions extends EncryptedSerializerOptions {
  /**
   * PBKDF2 salt, not secret but required: a string (UTF-8) or bytes. Use 16
   * random bytes per user or database, stored next to the data (NIST SP
   * 800-132); the same passphrase and salt always give the same key.
   */
  salt: string | Uint8Array;
  /**
   * PBKDF2-HMAC-SHA256 rounds. Default `DEFAULT_PBKDF2_ITERATIONS`
   * (600,000, ~0.2-1 s). Lower it only in tests: it is what makes guessing
   * passphrases against a stolen database slow.
   */
  iterations?: number;
  /**
   * Tests only: accept a salt under {@link MIN_SALT_BYTES} bytes and fewer
   * than {@link MIN_PBKDF2_ITERATIONS} rounds, so test suites derive keys
   * fast. A key derived so is cheap to guess: never set it in an app.
   */
  insecureTestOnlyWeakKdf?: boolean;
}

/** The shortest salt `fromPassphrase` accepts (NIST SP 800-132: at least 128 bits). */
export const MIN_SALT_BYTES = 16;

/** The fewest PBKDF2 rounds `fromPassphrase` accepts. */
export const MIN_PBKDF2_ITERATIONS = 100_000;
