/**
 * Reading a request's JSON body: each field checked for its type, a wrong one
 * answered 422 with the field named, before anything runs or is written.
 */
import type { Context } from "hono";
import { isPlainObject } from "../core/guards.js";
import { assertStorableId } from "../rows/ids.js";

/** A request the server refuses: answered 422 with this message. */
export class BadRequest extends Error {}

/** The request's JSON body as an object (an empty body is `{}`). */
export async function body(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new BadRequest("The request body is not JSON.");
  }
  if (!isPlainObject(json)) throw new BadRequest("The request body must be a JSON object.");
  return json;
}

/** `json[key]` if `ok`, undefined if absent or null; `within` names the object `json` is in the message ("checkpoint."). */
function field<T>(
  json: Record<string, unknown>,
  key: string,
  what: string,
  ok: (value: unknown) => value is T,
  within = "",
): T | undefined {
  const value = json[key];
  if (value === undefined || value === null) return undefined;
  if (!ok(value)) throw new BadRequest(`${within}${key} must be ${what}; got ${JSON.stringify(value)}.`);
  return value;
}

/**
 * `threadId` if the saver would store it: a thread the saver refuses (an
 * empty id, `__proto__`, a U+0000 or a lone surrogate) failed only at its
 * first run, its record already stored. "." and ".." too: no URL path names them.
 * @throws {BadRequest} naming the saver's reason.
 */
export function storableThreadId(threadId: string): string {
  try {
    assertStorableId("thread_id", threadId);
  } catch (error) {
    throw new BadRequest((error as Error).message);
  }
  // The saver stores them, but the SDK refuses them as a path segment ("Invalid path segment"), and a URL
  // resolves them away: taken, the thread could never be read, run or deleted.
  if (threadId === "." || threadId === "..") {
    throw new BadRequest(`thread_id ${JSON.stringify(threadId)} cannot be named in a URL path: choose another id.`);
  }
  return threadId;
}

/** `json[key]` if it is a string, undefined if absent or null. */
export function optionalString(json: Record<string, unknown>, key: string, within = ""): string | undefined {
  return field(json, key, "a string", (value): value is string => typeof value === "string", within);
}

/** `json[key]` if it is a non-negative integer, undefined if absent or null. */
export function optionalNumber(json: Record<string, unknown>, key: string): number | undefined {
  return field(
    json,
    key,
    "a non-negative integer",
    (value): value is number => Number.isInteger(value) && (value as number) >= 0,
  );
}

/** `json[key]` if it is a boolean, undefined if absent or null. */
export function optionalBoolean(json: Record<string, unknown>, key: string): boolean | undefined {
  return field(json, key, "a boolean", (value): value is boolean => typeof value === "boolean");
}

/** `json[key]` if it is a JSON object, undefined if absent or null. */
export function optionalObject(
  json: Record<string, unknown>,
  key: string,
  within = "",
): Record<string, unknown> | undefined {
  return field(json, key, "an object", isPlainObject, within);
}

/** `value` if it is one of `allowed`. */
export function checkOneOf<T extends string>(value: string, allowed: readonly T[], key: string): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new BadRequest(`${key} must be one of ${allowed.join(", ")}; got ${JSON.stringify(value)}.`);
  }
  return value as T;
}

/**
 * The checkpoint's address `json[key]` names (`thread_id`, `checkpoint_ns`,
 * `checkpoint_id` strings, `checkpoint_map` an object, each may be absent or
 * null), undefined if absent or null. Only those fields, as the Agent
 * Server's schema keeps them: the address goes into a run's configurable,
 * where any other key would reach LangGraph (its own `__pregel_*` ones too).
 */
export function optionalCheckpoint(json: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const checkpoint = optionalObject(json, key);
  if (checkpoint === undefined) return undefined;
  const address: Record<string, unknown> = {};
  for (const field of ["thread_id", "checkpoint_ns", "checkpoint_id"]) {
    const value = optionalString(checkpoint, field, `${key}.`);
    if (value !== undefined) address[field] = value;
  }
  const map = optionalObject(checkpoint, "checkpoint_map", `${key}.`);
  if (map !== undefined) address.checkpoint_map = map;
  return address;
}

/**
 * A `select`: a list of field names each one of `allowed` (or, with
 * `valuesKeys`, `values.<key>`); none when absent or null.
 */
export function selectOf(value: unknown, allowed: readonly string[], valuesKeys: boolean): string[] {
  if (value === undefined || value === null) return [];
  const ok = (field: unknown) =>
    typeof field === "string" && (allowed.includes(field) || (valuesKeys && /^values\..+/.test(field)));
  if (!Array.isArray(value) || !value.every(ok)) {
    throw new BadRequest(
      `select must be a list of ${allowed.join(", ")}${valuesKeys ? " or values.<key>" : ""}; got ${JSON.stringify(value)}.`,
    );
  }
  return value as string[];
}
