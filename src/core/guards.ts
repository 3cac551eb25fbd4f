/**
 * Small guards used across layers.
 */

/** True for an object literal or a null-prototype object (not an array, a class instance or a built-in). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** True for an array whose every item is a string. */
export function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

/** The message of a thrown value, whatever was thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Whether IndexedDB takes `value` as a key: the check its requests make
 * (they throw `DataError` synchronously otherwise), through `only`, a key
 * range factory (a database's own; default the global `IDBKeyRange.only`).
 */
export function isValidKey(
  value: unknown,
  only: (key: IDBValidKey) => unknown = (key) =>
    (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange.only(key),
): boolean {
  try {
    only(value as IDBValidKey);
    return true;
  } catch {
    return false;
  }
}
