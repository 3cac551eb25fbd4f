/** Scans stored data for plaintext: the checks behind "no marker at rest". */

/** Every Uint8Array and string inside `value` (objects, arrays, maps). */
export function* leaves(value: unknown, seen = new Set<unknown>()): Generator<Uint8Array | string> {
  if (typeof value === "string") yield value;
  if (typeof value !== "object" || value === null || seen.has(value)) return;
  seen.add(value);
  if (value instanceof Uint8Array) {
    yield value;
    return;
  }
  const children = value instanceof Map ? [...value.keys(), ...value.values()] : Object.values(value);
  for (const child of children) yield* leaves(child, seen);
}

/** True when `needle` appears (as UTF-8 bytes, or in a string) anywhere in `value`. */
export function containsText(value: unknown, needle: string): boolean {
  const bytes = new TextEncoder().encode(needle);
  for (const leaf of leaves(value)) {
    if (typeof leaf === "string") {
      if (leaf.includes(needle)) return true;
      continue;
    }
    outer: for (let i = 0; i + bytes.length <= leaf.length; i++) {
      for (let j = 0; j < bytes.length; j++) if (leaf[i + j] !== bytes[j]) continue outer;
      return true;
    }
  }
  return false;
}
