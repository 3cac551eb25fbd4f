/**
 * The text of the error a storage instance throws when another tab changed
 * its key (protocol.ts `keyChanged` decides when): loaded with the other
 * rare failures (failures.ts), not shipped up front.
 */

/**
 * Why database `dbName`'s instance cannot go on: its key `reason` (by
 * default: does not open the new key record).
 * @internal
 */
export function keyChangedMessage(dbName: string, reason?: string): string {
  return `The encryption key of IndexedDB database "${dbName}" was changed in another tab (rekey or changeKey), and this instance's key ${reason ?? "does not open the new key record"}. Nothing was written. Open it again with the new passphrase or key.`;
}
