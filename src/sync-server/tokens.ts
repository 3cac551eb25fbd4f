/**
 * The CLI's token table: `SYNC_TOKENS` (`token=user,token=user`) and
 * `SYNC_TOKENS_FILE` (a JSON object of token to user id).
 *
 * An entry the server could never match is refused at start, naming its
 * place but not the token: a token with base64 padding (`openssl rand
 * -base64 32` ends in "=") split at its first "=" became a shorter token
 * for a user named "=ada", and every device of that user got 401 with
 * nothing said at start.
 */
/// <reference types="node" />
import { readFileSync } from "node:fs";
import { MAX_USER_ID_BYTES, SPACE_SEPARATOR } from "./apps.js";

/** Why `token` and `user` cannot be an entry, or undefined. */
function defect(token: string, user: unknown): string | undefined {
  // The server takes `Authorization: Bearer <token>` with no white space in the token.
  if (/\s/.test(token)) return "its token holds a space";
  if (token.length === 0) return "its token is empty";
  // A header value carries visible ASCII and Latin-1 bytes only: fetch refuses the rest, or sends what never matches.
  if (/[^\x21-\x7e\xa1-\xff]/.test(token))
    return "its token holds a control character or one past U+00FF, which no Authorization header can carry";
  if (typeof user !== "string" || user.length === 0) return "its user id is not a non-empty string";
  if (user.includes(SPACE_SEPARATOR)) return "its user id holds U+001F, which the server keeps for app spaces";
  if (Buffer.byteLength(user) > MAX_USER_ID_BYTES)
    return `its user id is longer than ${MAX_USER_ID_BYTES} bytes (UTF-8), more than the server stores`;
  return undefined;
}

/** Reads the token table from the environment; throws naming the first entry it cannot use. */
export function tokenTable(env: NodeJS.ProcessEnv): Map<string, string> {
  const table = new Map<string, string>();
  /** Adds an entry; one token given to two users would authenticate as one of them, silently. */
  const add = (token: string, user: string, where: string) => {
    const other = table.get(token);
    if (other !== undefined && other !== user)
      throw new Error(`${where} cannot be used: it repeats the token of another user.`);
    table.set(token, user);
  };
  if (env.SYNC_TOKENS_FILE) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(env.SYNC_TOKENS_FILE, "utf8"));
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      throw new Error(`SYNC_TOKENS_FILE ${env.SYNC_TOKENS_FILE} is not JSON (${error.message}).`, { cause: error });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new Error(
        `SYNC_TOKENS_FILE ${env.SYNC_TOKENS_FILE} must hold a JSON object of token to user id, not ${Array.isArray(parsed) ? "an array" : parsed === null ? "null" : `a ${typeof parsed}`}.`,
      );
    Object.entries(parsed).forEach(([token, user], i) => {
      const wrong = defect(token, user);
      if (wrong) throw new Error(`SYNC_TOKENS_FILE: entry ${i + 1} cannot be used: ${wrong}.`);
      add(token, user as string, `SYNC_TOKENS_FILE: entry ${i + 1}`);
    });
  }
  const entries = (env.SYNC_TOKENS ?? "").split(",");
  entries.forEach((entry, i) => {
    if (entry.trim() === "") return;
    const parts = entry.split("=");
    const where = `SYNC_TOKENS: entry ${i + 1}`;
    if (parts.length > 2)
      throw new Error(
        `${where} holds more than one "=", so its token and user cannot be told apart (base64 padding?): ` +
          "put such tokens in SYNC_TOKENS_FILE, a JSON object of token to user id.",
      );
    const [token, user] = parts.map((part) => part.trim()) as [string, string | undefined];
    const wrong = parts.length < 2 || user === "" ? "it is not token=user" : defect(token, user);
    if (wrong) throw new Error(`${where} cannot be used: ${wrong}.`);
    add(token, user!, where);
  });
  return table;
}
