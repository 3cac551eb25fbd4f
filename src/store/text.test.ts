/**
 * The texts an index path finds in a value (store/text.ts), at sizes where
 * passing every text as an argument of one call overflowed the stack.
 */
import { describe, expect, it } from "vitest";
import { getTextAtPath } from "./text.js";

describe("getTextAtPath over a long list", () => {
  // Past about 125,000 arguments `results.push(...texts)` threw "Maximum call stack size exceeded" (V8), so a
  // put indexing `tags[*]` over such a list failed as a RangeError instead of embedding its texts.
  const tags = Array.from({ length: 200_000 }, (_, i) => `tag ${i}`);

  it.each([["tags[*]"], ["doc.tags[*]"], ["doc.tags"], ["*.tags[*]"]])("finds every text at %s", (path) => {
    const value = path.startsWith("tags") ? { tags } : { doc: { tags } };
    const texts = getTextAtPath(value, path);
    expect(texts.length).toBe(path === "doc.tags" ? 1 : tags.length);
    if (texts.length > 1) expect([texts[0], texts.at(-1)]).toEqual(["tag 0", "tag 199999"]);
  });
});
