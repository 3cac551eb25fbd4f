/**
 * Base64 of bytes, both ways: exact (the standard alphabet with padding out,
 * standard or URL-safe in, anything else refused), and in as many native
 * calls each way for megabytes as for a few bytes. The Playwright helpers move whole thread exports through it, in
 * Node and in the page: a 52 MB export took 17.8 s to encode one character
 * at a time (and the string it built, one piece per character, ran a test
 * worker out of memory).
 */
import { describe, expect, it } from "vitest";
import { countCalls, type Counted } from "../../test/support/call-counts.js";
import { byDepth } from "../../test/support/depth.js";
import { fromBase64, toBase64 } from "./bytes.js";

/** Standard base64 by the platform, to compare with. */
function reference(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Calls of one built-in a conversion may make whatever the size: more grow with it (one per chunk, or per character). */
const MAX_CALLS = 4;

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

  it("builds megabytes both ways in as many native calls as a few bytes take, not one per character", async () => {
    // Counted, not timed: before, 4-5 s for 16 MiB one string piece per character (and a
    // worker out of memory at 52 MB); a time bound failed on a loaded machine instead. What
    // matters is that the calls do not grow with the input: the same counts for 3 bytes as
    // for megabytes, and few. Not "exactly one": an engine's own base64 (Uint8Array's
    // toBase64) would make it none. The fast depth takes 1 MiB, the full 16 MiB.
    const perCharacter: Counted[] = [
      [String, "fromCharCode"],
      [String.prototype, "indexOf"],
      [String.prototype, "concat"],
    ];
    const both = async (bytes: Uint8Array) => {
      const encoded = await countCalls([[TextDecoder.prototype, "decode"], ...perCharacter], () => toBase64(bytes));
      const decoded = await countCalls([[globalThis, "atob"], ...perCharacter], () => fromBase64(encoded.result));
      return { encoded, decoded };
    };
    const few = await both(new Uint8Array([1, 2, 3]));
    const bytes = new Uint8Array(byDepth(1 << 20, 16 << 20));
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i >> 12;
    const { encoded, decoded } = await both(bytes);
    expect(encoded.calls, "decode, fromCharCode, indexOf, concat").toEqual(few.encoded.calls);
    expect(decoded.calls, "atob, fromCharCode, indexOf, concat").toEqual(few.decoded.calls);
    for (const count of [...encoded.calls, ...decoded.calls]) expect(count).toBeLessThanOrEqual(MAX_CALLS);
    expect(encoded.result.length).toBe(((bytes.length + 2) / 3) * 4);
    expect(decoded.result.length).toBe(bytes.length);
    expect(decoded.result[4096 * 7]).toBe(7);
    expect(firstDifference(decoded.result, bytes)).toBe(-1);
  });
});
