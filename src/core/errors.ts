/**
 * The package's errors, and the one rule for what is thrown:
 *
 * - **Runtime failures are package errors.** Everything that goes wrong with
 *   storage (IndexedDB, quota, a closed or blocked connection), stored data
 *   (a format of another library or a newer version, malformed rows), crypto
 *   (wrong key, tampering, no WebCrypto), serialization, or another tab
 *   (key-record races) is an {@link IndexedDBCheckpointError} subclass, with
 *   the original error as `cause`, so an app can tell them apart with
 *   `instanceof` and still see what the browser said.
 * - **Argument and configuration mistakes are plain errors** (`Error`,
 *   `TypeError`), as LangGraph's own savers throw them, with a message that
 *   says what to pass instead. They are thrown before any I/O, so nothing is
 *   written.
 * - A bug or a deliberate error inside user code the package calls (an
 *   embeddings model, a graph node) keeps its identity.
 *
 * What lives in core/: leaf utilities every layer may use (errors, bytes,
 * CRC-32, equality, guards, identity strings). It imports nothing of the package.
 */

/** Base class of every error this package throws on purpose. */
export class IndexedDBCheckpointError extends Error {}

/**
 * Names each error class as written here, on its prototype (errors read
 * their `name` from there): an app's minifier renames classes, so a name
 * taken from the class would read "t" in a production build, in logs and in
 * `error.name` checks. An app's own subclass names itself. @internal
 */
export function nameErrors(classes: Record<string, { prototype: Error }>): void {
  for (const name in classes) classes[name]!.prototype.name = name;
}

/**
 * Opening or upgrading the database waited longer than `blockedTimeoutMs`
 * because another tab (or connection) holds an older version open and did not
 * close it on `versionchange`.
 */
export class DatabaseBlockedError extends IndexedDBCheckpointError {}

/**
 * The connection was closed (by `close()`, by the browser, or by another
 * tab's upgrade) while an operation needed it, and could not be reopened.
 */
export class DatabaseClosedError extends IndexedDBCheckpointError {}

/**
 * A stored value could not be decrypted: wrong key or passphrase, a flipped
 * bit, a value copied from another row, or a plaintext row read by a
 * serializer that refuses plaintext.
 */
export class DecryptionError extends IndexedDBCheckpointError {}

/**
 * A write was refused because another tab (or another saver or store on the
 * same database) changed the database's encryption key with `rekey` or
 * `changeKey`, and this instance's key does not open the new key record (a
 * new passphrase). Nothing was written: no value ever lands under a retired
 * key. Open the saver or store again with the new passphrase or key. A
 * `DecryptionError`, so code that handles a wrong key handles this too.
 */
export class KeyChangedError extends DecryptionError {}

/** A value could not be serialized or a stored row could not be decoded. */
export class SerializationError extends IndexedDBCheckpointError {}

/**
 * A write did not fit in the origin's storage quota. Browsers report this as a
 * `QuotaExceededError`, or as an `AbortError` whose transaction error is one;
 * both arrive as this class, with the browser's error as `cause`.
 */
export class QuotaExceededError extends IndexedDBCheckpointError {}

/**
 * IndexedDB is missing or refuses to open (some private modes, sandboxed
 * iframes, `file:` pages, or a Node process without a polyfill).
 */
export class IndexedDBUnavailableError extends IndexedDBCheckpointError {}

nameErrors({
  IndexedDBCheckpointError,
  DatabaseBlockedError,
  DatabaseClosedError,
  DecryptionError,
  KeyChangedError,
  SerializationError,
  QuotaExceededError,
  IndexedDBUnavailableError,
});

/** Names a DOMException (or look-alike) carries, without trusting its class. */
function errorName(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "name" in error) {
    const { name } = error as { name: unknown };
    return typeof name === "string" ? name : undefined;
  }
  return undefined;
}

/**
 * True when `error`, or anything in its `cause` chain (or the transaction error
 * an `AbortError` wraps), is a quota failure. Chromium and Firefox report a
 * full disk as `QuotaExceededError` directly; Safari and some Chromium paths
 * only abort the transaction, with the quota error on `transaction.error`.
 */
export function isQuotaError(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== undefined && current !== null && !seen.has(current)) {
    seen.add(current);
    if (current instanceof QuotaExceededError) return true;
    const name = errorName(current);
    if (name === "QuotaExceededError" || name === "NS_ERROR_DOM_QUOTA_REACHED") {
      return true;
    }
    const message = (current as { message?: unknown }).message;
    if (typeof message === "string" && /quota/i.test(message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Wraps whatever IndexedDB threw in the package's error classes, keeping it as
 * `cause`. Errors that already belong to the package pass through unchanged.
 *
 * @param error What the request, transaction or open rejected with.
 * @param action What we were doing, for the message ("put checkpoint").
 * @internal
 */
export function toPackageError(error: unknown, action: string): Error {
  if (error instanceof IndexedDBCheckpointError) return error;
  const name = errorName(error) ?? "Error";
  const detail =
    error instanceof Error || (typeof error === "object" && error !== null && "message" in error)
      ? String((error as { message: unknown }).message)
      : String(error);
  if (isQuotaError(error)) {
    return new QuotaExceededError(
      `IndexedDB ran out of storage quota while trying to ${action}. Free space (deleteThread, prune) or ask for persistent storage with navigator.storage.persist(). (${name}: ${detail})`,
      { cause: error },
    );
  }
  if (name === "InvalidStateError" && /clos/i.test(detail)) {
    return new DatabaseClosedError(`The IndexedDB connection closed while trying to ${action}. (${name}: ${detail})`, {
      cause: error,
    });
  }
  return new IndexedDBCheckpointError(`IndexedDB failed to ${action}: ${name}: ${detail}`, {
    cause: error,
  });
}
