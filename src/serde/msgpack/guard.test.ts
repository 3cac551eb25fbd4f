/**
 * Crafted payloads (issue 11, item 7): msgpackr's own extensions, which this
 * format never writes, behind a valid header. Each would otherwise decode to
 * a value msgpackr builds by itself (a Set, an Error, a RegExp, a typed
 * array, records compiled with `new Function`, a cycle, its internal C1
 * marker); each must be a `SerializationError` naming the extension.
 * Runs in Node and in Chromium.
 */
import { describe, expect, it } from "vitest";
import { SerializationError } from "../../core/errors.js";
import { MsgpackSerializer } from "./index.js";
import { FORMAT_MAGIC, FORMAT_VERSION } from "./wire.js";

const serde = new MsgpackSerializer();

/** `hex` (spaces allowed) behind the format header. */
function payload(hex: string): Uint8Array {
  const body = hex.replace(/\s+/g, "");
  const bytes = new Uint8Array(2 + body.length / 2);
  bytes[0] = FORMAT_MAGIC;
  bytes[1] = FORMAT_VERSION;
  for (let i = 0; i < body.length; i += 2) bytes[2 + i / 2] = parseInt(body.slice(i, i + 2), 16);
  return bytes;
}

/** What loadsTyped gives: the value, or the error it rejects with. */
function load(bytes: Uint8Array): Promise<unknown> {
  return serde.loadsTyped("msgpack", bytes).then(
    (value) => value,
    (error: unknown) => error,
  );
}

const hexOf = (text: string): string => [...new TextEncoder().encode(text)].map((b) => b.toString(16)).join("");

// Each msgpackr extension as msgpackr itself reads it (fixext 1 with a dummy byte, then the value, or raw data).
const ATTACKS: [name: string, type: string, hex: string][] = [
  ["Error (0x65)", "0x65", `d4 65 00 93 a5 ${hexOf("Error")} a1 78 c0`],
  ["RegExp (0x78)", "0x78", "d4 78 00 92 a1 78 a1 67"],
  ["Set (0x73)", "0x73", "d4 73 00 91 01"],
  ["typed array (0x74, Float32Array)", "0x74", "c7 05 74 07 00 00 80 3f"],
  ["structured clone cycle (0x69 target, 0x70 reference)", "0x69", "d6 69 00 00 00 01 92 01 d6 70 00 00 00 01"],
  ["structured clone reference alone (0x70)", "0x70", "d6 70 00 00 00 01"],
  [
    "record definition (fixext 1 0x72) and record references (0x40)",
    "0x72",
    "92 d4 72 40 92 a1 61 a1 62 01 02 40 03 04",
  ],
  ["record definition with a high byte (fixext 2 0x72)", "0x72", "d5 72 40 00 92 a1 61 a1 62 01 02"],
  [
    "bundled strings (0x62)",
    "0x62",
    `de 00 02 a1 61 d6 62 00 00 00 0a c1 1e a1 62 c1 1e a0 d9 3c ${"78".repeat(30)}${"79".repeat(30)}`,
  ],
  ["msgpackr's undefined (ext 0)", "0x00", "91 d4 00 00"],
  ["one of Python's codes (1) in ext 8", "0x01", "c7 01 01 00"],
  ["an unknown code in ext 32", "0x6d", "c9 00 00 00 01 6d 00"],
  ["our own Map code (50) in fixext 2, a form we never write", "0x32", "d5 32 00 00"],
  ["our own Map code (50) in ext 8, a form we never write", "0x32", "c7 01 32 90"],
];

describe("crafted MessagePack payloads (issue 11, item 7)", () => {
  it.each(ATTACKS)("%s is refused with a SerializationError naming the extension", async (_name, type, hex) => {
    const result = await load(payload(hex));
    expect(result).toBeInstanceOf(SerializationError);
    expect((result as Error).message).toContain(`extension type ${type}`);
  });

  it.each(ATTACKS)(
    "%s is refused wherever it sits: deep in maps and arrays, after strings and binaries",
    async (_n, type, hex) => {
      // {s: str8(40), b: bin8(5), n: [1, -1, 1.5, {k: [<attack>]}]}
      const wrapped =
        `83 a1 73 d9 28 ${"61".repeat(40)} a1 62 c4 05 d4 73 00 91 01` +
        ` a1 6e 94 01 ff cb 3f f8 00 00 00 00 00 00 81 a1 6b 91 ${hex}`;
      const result = await load(payload(wrapped));
      expect(result).toBeInstanceOf(SerializationError);
      expect((result as Error).message).toContain(`extension type ${type}`);
    },
  );

  it("the never-used byte 0xC1 (msgpackr's internal C1 marker object) is refused", async () => {
    const result = await load(payload("92 01 c1"));
    expect(result).toBeInstanceOf(SerializationError);
    expect((result as Error).message).toMatch(/0xc1 at byte 4:/);
  });

  it("the bytes of a refused extension inside a string or a binary are data, not an extension", async () => {
    // ["\xd4s\0", bin(d4 73 00 91 01), {"d4": 7}]: a byte scan would refuse this, the structural walk must not.
    const value = await load(payload(`93 a4 c3 94 73 00 c4 05 d4 73 00 91 01 81 a2 64 34 07`));
    expect(value).toEqual(["\u00d4s\u0000", Uint8Array.of(0xd4, 0x73, 0x00, 0x91, 0x01), { d4: 7 }]);
  });

  it("integers 0x40-0x7f stay integers (no record was ever defined)", async () => {
    expect(await load(payload("93 40 7f d4 30 00"))).toEqual([64, 127, undefined]);
  });

  it("every extension this format writes still reads, in every size msgpackr picks", async () => {
    const value = {
      undef: undefined,
      negZero: -0,
      map: new Map([["k", new Set([1])]]),
      error: new RangeError("r"),
      regexp: /x/gu,
      typed: new Float32Array([1.5]),
      dates: [new Date(0), new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 1)), new Date(-1e12), new Date(8.64e15)],
      bigints: [2n ** 64n, -(2n ** 100n), 2n ** 1000n],
      proto: JSON.parse('{"__proto__": 1}') as unknown,
    };
    const [, bytes] = await serde.dumpsTyped(value);
    expect(await load(bytes)).toEqual(value);
  });

  it("a truncated payload is still msgpackr's corrupt-payload error, not a refusal", async () => {
    const result = await load(payload("93 01 d9 28 61"));
    expect(result).toBeInstanceOf(SerializationError);
    expect((result as Error).message).toMatch(/Corrupt MsgpackSerializer payload/);
  });
});
