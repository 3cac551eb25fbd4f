/**
 * Structural equality of stored values: what IndexedDB's structured clone
 * and the journal's msgpack round trip can hand back (plain objects, arrays,
 * byte arrays, dates, maps, sets, primitives).
 */

/** Options of {@link sameClone}. */
export interface SameCloneOptions {
  /**
   * Treat a key whose value is `undefined` as absent. The journal needs it:
   * its records drop `undefined` fields, while IndexedDB keeps them.
   */
  ignoreUndefinedKeys?: boolean;
}

/** True when `a` and `b` are equal structured clones (compare-and-swap of stored rows). */
export function sameClone(
  a: unknown,
  b: unknown,
  options: SameCloneOptions = {},
  seen = new Map<object, Set<object>>(),
): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  // Structured clone keeps cycles (only an edited row holds one): a pair met again compares equal where the
  // cycle closes, instead of recursing until the stack overflows (a RangeError out of deleteForRuns). Every
  // pair is kept: one object met beside two others in turn (a list holding itself against a two-list cycle)
  // would otherwise be met again forever.
  const partners = seen.get(a) ?? seen.set(a, new Set()).get(a)!;
  if (partners.has(b)) return true;
  partners.add(b);
  const tag = Object.prototype.toString.call(a);
  if (tag !== Object.prototype.toString.call(b)) return false;
  if (ArrayBuffer.isView(a) || a instanceof ArrayBuffer) {
    const bytes = (x: ArrayBufferView | ArrayBuffer) =>
      ArrayBuffer.isView(x) ? new Uint8Array(x.buffer, x.byteOffset, x.byteLength) : new Uint8Array(x);
    const x = bytes(a as ArrayBufferView | ArrayBuffer);
    const y = bytes(b as ArrayBufferView | ArrayBuffer);
    return x.length === y.length && x.every((byte, i) => byte === y[i]);
  }
  if (tag === "[object Date]") return Object.is((a as Date).getTime(), (b as Date).getTime());
  if (tag === "[object Map]" || tag === "[object Set]") {
    const x = [...(a as Map<unknown, unknown> | Set<unknown>).entries()];
    const y = [...(b as Map<unknown, unknown> | Set<unknown>).entries()];
    return sameClone(x, y, options, seen);
  }
  const plain = (value: object) =>
    Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null;
  if (!plain(a) || !plain(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const keysOf = (value: object) =>
    options.ignoreUndefinedKeys && !Array.isArray(value)
      ? Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      : Object.keys(value);
  const keysA = keysOf(a);
  const keysB = keysOf(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every(
    (key) =>
      Object.hasOwn(b, key) &&
      sameClone((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], options, seen),
  );
}

/** Equality of a journaled row with a stored one: {@link sameClone} ignoring `undefined` fields. */
export function sameValue(a: unknown, b: unknown): boolean {
  return sameClone(a, b, { ignoreUndefinedKeys: true });
}
