/**
 * The app's encryption settings as the helpers take them, and their
 * JSON-able form that crosses `page.evaluate`. No serializer code here: the
 * page script (and `toStorageState`, in Node) builds the serializer from the
 * JSON form (page-serde.ts).
 */
import { toBase64 } from "../core/bytes.js";
import type { PageEncryption } from "./protocol.js";

/**
 * How the app's `EncryptedSerializer` gets its key: a passphrase with the
 * app's salt and rounds (`fromPassphrase`), or the raw key bytes or their
 * base64 (`fromRawKey`). `context` and `allowPlaintext` as the app sets them.
 */
export type AppEncryption =
  | {
      passphrase: string;
      salt: string | Uint8Array;
      iterations?: number;
      /** As the app passes it to `fromPassphrase` (tests that derive keys fast). */
      insecureTestOnlyWeakKdf?: boolean;
      context?: string;
      allowPlaintext?: boolean;
    }
  | { key: Uint8Array | string; context?: string; allowPlaintext?: boolean };

/** The settings as JSON for the page (bytes as base64). */
export function toPageEncryption(encryption: AppEncryption | undefined): PageEncryption | undefined {
  if (!encryption) return undefined;
  const common = { context: encryption.context, allowPlaintext: encryption.allowPlaintext };
  if ("passphrase" in encryption) {
    const { salt } = encryption;
    return {
      ...common,
      passphrase: encryption.passphrase,
      salt: typeof salt === "string" ? { text: salt } : { base64: toBase64(salt) },
      iterations: encryption.iterations,
      insecureTestOnlyWeakKdf: encryption.insecureTestOnlyWeakKdf,
    };
  }
  if ("key" in encryption) {
    const { key } = encryption;
    return { ...common, key: typeof key === "string" ? key : toBase64(key) };
  }
  throw new TypeError("encryption: pass { passphrase, salt } or { key } as the app gives EncryptedSerializer.");
}
