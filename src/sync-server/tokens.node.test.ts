/**
 * The CLI's token table as an operator writes it: tokens made by
 * `openssl rand -base64 32` end in "=", which is also the separator.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tokenTable } from "./tokens.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tokensFile(content: string): string {
  const dir = mkdtempSync(join(tmpdir(), "sync-tokens-"));
  dirs.push(dir);
  const file = join(dir, "tokens.json");
  writeFileSync(file, content);
  return file;
}

describe("the CLI's token table", () => {
  it("reads token=user pairs, spaces around them and empty entries aside", () => {
    const table = tokenTable({ SYNC_TOKENS: " t0k3n-ada = ada ,,t0k3n-bob=bob," });
    expect([...table]).toEqual([
      ["t0k3n-ada", "ada"],
      ["t0k3n-bob", "bob"],
    ]);
  });

  it.each([
    ["a base64 token with its padding", "c2VjcmV0LXRva2VuLW9mLWFkYQ===ada", /entry 1 .*more than one "="/],
    ["an entry without a user", "t0k3n-ada=ada,t0k3n-bob", /entry 2 .*token=user/],
    ["an empty user", "t0k3n-ada=", /entry 1 .*token=user/],
    ["a token holding a space", "t0k3n ada=ada", /entry 1 .*space/],
    ["a user id longer than the server stores", `t0k3n-ada=${"a".repeat(1025)}`, /entry 1 .*longer than 1024 bytes/],
  ])("refuses %s, naming the entry but not the token", (_, tokens, message) => {
    let error: Error | undefined;
    try {
      tokenTable({ SYNC_TOKENS: tokens });
    } catch (caught) {
      error = caught as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain("t0k3n");
    expect(error?.message).not.toContain("c2VjcmV0");
  });

  it("takes any token from SYNC_TOKENS_FILE, and refuses a user id that is not a string", () => {
    const table = tokenTable({ SYNC_TOKENS_FILE: tokensFile('{"c2VjcmV0LXRva2Vu==": "ada"}') });
    expect([...table]).toEqual([["c2VjcmV0LXRva2Vu==", "ada"]]);
    expect(() => tokenTable({ SYNC_TOKENS_FILE: tokensFile('{"t0k3n-bob": 42}') })).toThrow(
      /SYNC_TOKENS_FILE: entry 1 .*user id/,
    );
  });

  it("refuses one token given to two users, in either source, naming the entry but not the token", () => {
    expect(() => tokenTable({ SYNC_TOKENS: "t0k3n-ada=ada,t0k3n-ada=bob" })).toThrow(
      /SYNC_TOKENS: entry 2 .*token of another user/,
    );
    const file = tokensFile('{"t0k3n-ada": "ada"}');
    expect(() => tokenTable({ SYNC_TOKENS_FILE: file, SYNC_TOKENS: "t0k3n-ada=bob" })).toThrow(
      /SYNC_TOKENS: entry 1 .*token of another user/,
    );
    expect(() => tokenTable({ SYNC_TOKENS: "t0k3n-ada=bob,t0k3n-ada=bob" })).not.toThrow();
    try {
      tokenTable({ SYNC_TOKENS: "t0k3n-ada=ada,t0k3n-ada=bob" });
    } catch (error) {
      expect((error as Error).message).not.toContain("t0k3n");
    }
  });

  it.each([
    ["an array", '["t0k3n-ada"]'],
    ["null", "null"],
    ["a string", '"t0k3n-ada"'],
  ])("refuses a SYNC_TOKENS_FILE holding %s, not an object of token to user", (_, content) => {
    expect(() => tokenTable({ SYNC_TOKENS_FILE: tokensFile(content) })).toThrow(
      /SYNC_TOKENS_FILE .*JSON object of token to user id/,
    );
  });

  it("names SYNC_TOKENS_FILE when it is not JSON", () => {
    expect(() => tokenTable({ SYNC_TOKENS_FILE: tokensFile('{"t0k3n-ada": "ada",}') })).toThrow(
      /SYNC_TOKENS_FILE .*not JSON/,
    );
  });

  it.each([
    ["a character past U+00FF", '{"t0k3n-\u20ac": "ada"}'],
    ["a control character", '{"t0k3n-\\u0007": "ada"}'],
  ])("refuses a token holding %s, which no Authorization header can carry", (_, content) => {
    expect(() => tokenTable({ SYNC_TOKENS_FILE: tokensFile(content) })).toThrow(/SYNC_TOKENS_FILE: entry 1 .*header/);
  });
});
