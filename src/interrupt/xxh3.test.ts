import { describe, expect, it } from "vitest";
// LangGraph's own hash, reached by file because its package neither exports nor types it.
// @ts-expect-error: no declaration file ships for this internal module
import { XXH3 } from "../../node_modules/@langchain/langgraph/dist/hash.js";
import { xxh3 } from "./xxh3.js";

/** A string of `length` UTF-16 units mixing ASCII, 2-, 3- and 4-byte UTF-8 characters. */
function sample(length: number, seed: number): string {
  const alphabet = ["a", "Z", "|", ":", "é", "€", "😀", "0", "-"];
  let text = "";
  for (let i = 0; text.length < length; i += 1) text += alphabet[(i * 7 + seed) % alphabet.length];
  return text.slice(0, length);
}

describe("xxh3", () => {
  it("equals LangGraph's XXH3 on every length class (0-16, 17-128, 129-240, long, several blocks)", () => {
    for (let length = 0; length <= 1200; length += length < 300 ? 1 : 37) {
      for (const seed of [0, 3]) {
        const input = sample(length, seed);
        expect(xxh3(input), `length ${length}`).toBe(XXH3(input));
      }
    }
  });

  it("names a real task namespace as LangGraph does", () => {
    const ns = "approve:1b0f4ac2-7d3e-5f21-9c11-2a9e4f5b6c7d";
    expect(xxh3(ns)).toBe(XXH3(ns));
    expect(xxh3(`${ns}|2`)).toBe(XXH3(`${ns}|2`));
    expect(xxh3(ns)).toMatch(/^[0-9a-f]{32}$/);
  });
});
