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
});
