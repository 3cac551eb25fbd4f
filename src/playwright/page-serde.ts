/**
 * The app's serializer, rebuilt from the encryption settings a test passed
 * (their JSON form): what the page script reads and writes an encrypted
 * database with, and what `toStorageState` imports with in Node. Keys are
 * derived once per settings: PBKDF2 at the app's rounds takes up to a second,
 * and the waits read many times.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { fromBase64 } from "../core/bytes.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { readThreadExportHeader } from "../portable/index.js";
import { BOUND_EXPORT_VERSION } from "../portable/frames.js";
import type { PageEncryption } from "./protocol.js";

const serializers = new Map<string, Promise<EncryptedSerializer>>();

/** An encrypted export given without the app's settings (its message names the file, not the database). */
export class SealedFileError extends Error {}

/** The serializer for `encryption`, or undefined (the saver's default) without settings. */
export function serializerFor(encryption: PageEncryption | undefined): Promise<SerializerProtocol | undefined> {
  if (!encryption) return Promise.resolve(undefined);
  const id = JSON.stringify(encryption);
  let serializer = serializers.get(id);
  if (!serializer) {
    const common = { context: encryption.context, allowPlaintext: encryption.allowPlaintext };
    serializer =
      encryption.key !== undefined
        ? EncryptedSerializer.fromRawKey(encryption.key, common)
        : EncryptedSerializer.fromPassphrase(encryption.passphrase ?? "", {
            ...common,
            salt:
              encryption.salt && "base64" in encryption.salt
                ? fromBase64(encryption.salt.base64)
                : (encryption.salt?.text ?? ""),
            iterations: encryption.iterations,
            insecureTestOnlyWeakKdf: encryption.insecureTestOnlyWeakKdf,
          });
    serializers.set(id, serializer);
    serializer.catch(() => serializers.delete(id));
  }
  return serializer;
}

/**
 * The serializer to decode an export with before importing it into the app's
 * database: the app's `serde` for a file it sealed (format version 2, or an
 * `…+aes-gcm` type), the default for a plain one. Both are seeded into
 * encrypted apps: their own exports and snapshots, and plain fixtures, which
 * the app's serializer would refuse as unencrypted. A sealed file without
 * the app's settings is refused here, naming the file (not the database) as
 * encrypted and the helper's own options.
 */
export async function importSerde(
  file: Uint8Array,
  serde: SerializerProtocol | undefined,
  helper = "seedThread",
): Promise<SerializerProtocol | undefined> {
  const header = await readThreadExportHeader(file);
  const sealed = header.version >= BOUND_EXPORT_VERSION || header.serde.endsWith("+aes-gcm");
  if (sealed && !serde) {
    throw new SealedFileError(
      `${helper}: this .lgthread file is encrypted ("${header.serde}", format version ${header.version}): the app that exported thread "${header.threadId}" seals its exports with its key, and only that key reads it. Give that app's settings, { encryption: { passphrase, salt } } or { encryption: { key } }, for a database it encrypts with them; or export the thread with { unencrypted: true } (saver.exportThread) for a database without encryption.`,
    );
  }
  return sealed ? serde : undefined;
}
