/**
 * Base64 of bytes, both ways: exact (the standard alphabet with padding out,
 * standard or URL-safe in, anything else refused), and in time linear in
 * the size. The Playwright helpers move whole thread exports through it, in
 * Node and in the page: a 52 MB export took 17.8 s to encode one character
 * at a time (and the string it built, one piece per character, ran a test
 * worker out of memory).
 */
import { describe, expect, it } from "vitest";
import { fromBase64, toBase64 } from "./bytes.js";

/** Standard base64 by the platform, to compare with. */
function reference(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * The index of the first byte where `actual` differs from `expected` (their
 * shorter length when one is a prefix of the other), or -1 when they are
 * equal. `toEqual` on two 100 KB arrays took over a second per pair: nearly
 * all of this file's time.
 */
function firstDifference(actual: Uint8Array, expected: Uint8Array): number {
  const length = Math.min(actual.length, expected.length);
  for (let i = 0; i < length; i++) if (actual[i] !== expected[i]) return i;
  return actual.length === expected.length ? -1 : length;
}

describe("base64", () => {
  it("encodes and decodes exactly, across the lengths that end a chunk", () => {
    for (const n of [0, 1, 2, 3, 4, 5, 0x7fff, 0x8000, 0x8001, 0x8002, 3 * 0x8000 + 1, 100_003]) {
      const bytes = new Uint8Array(n);
      for (let i = 0; i < n; i += 65536) crypto.getRandomValues(bytes.subarray(i, i + 65536));
      const text = toBase64(bytes);
      expect(text, `length ${n}`).toBe(reference(bytes));
      const urlSafe = text.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      for (const [input, label] of [
        [text, `length ${n}`],
        [` ${urlSafe}\n`, `length ${n}, URL-safe`],
      ] as const) {
        const decoded = fromBase64(input);
        expect(decoded, label).toBeInstanceOf(Uint8Array);
        expect(firstDifference(decoded, bytes), label).toBe(-1);
      }
    }
  });

  it("refuses what is not base64", () => {
    for (const bad of ["a", "ab c", "ab$d", "abcde", "a=bc"]) {
      expect(() => fromBase64(bad), JSON.stringify(bad)).toThrow(TypeError);
    }
  });

  it("takes time linear in the size: 16 MiB both ways well under a second", () => {
    const bytes = new Uint8Array(16 << 20);
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i >> 12;
    const started = performance.now();
    const back = fromBase64(toBase64(bytes));
    const ms = performance.now() - started;
    expect(back.length).toBe(bytes.length);
    expect(back[4096 * 7]).toBe(7);
    // Before: 4-5 s (one string piece per character); now about 0.1 s. The bound leaves room for a busy machine.
    expect(ms).toBeLessThan(1500);
  });
});
