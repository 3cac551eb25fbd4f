/**
 * The error a storage instance throws when another tab changed its key: in a
 * module of its own, so the saver loads it with the other rare failures
 * (failures.ts) and the store, which needs it with its key-change lock,
 * imports it directly.
 */
import { DecryptionError, KeyChangedError } from "../core/errors.js";

/**
 * The error of a storage instance whose key another tab changed: `cause`, a
 * `DecryptionError` from binding again (the key does not open the new
 * record), becomes a `KeyChangedError`; anything else stays as it is, unless
 * `reason` says the key changed again during the retry.
 * @internal
 */
export function keyChanged(dbName: string, cause: unknown, reason?: string): unknown {
  if (!reason && !(cause instanceof DecryptionError)) return cause;
  return new KeyChangedError(
    `The encryption key of IndexedDB database "${dbName}" was changed in another tab (rekey or changeKey), and this instance's key ${reason ?? "does not open the new key record"}. Nothing was written. Open it again with the new passphrase or key.`,
    { cause },
  );
}
