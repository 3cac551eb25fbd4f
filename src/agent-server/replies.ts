/**
 * The answers every route gives: JSON in the Agent Server's shapes, and the
 * 409 of a busy thread.
 */
import type { Context } from "hono";
import { toJsonText } from "./stream.js";

/**
 * A JSON response. LangChain messages go out in their dict form (as the Agent
 * Server sends them), not as LangChain's serialized constructor form.
 */
export function reply(c: Context, value: unknown, status = 200): Response {
  return c.body(toJsonText(value), status as 200, { "Content-Type": "application/json" });
}

/** The 409 the Agent Server answers when a thread is busy with a run. */
export function busy(c: Context, threadId: string): Response {
  return reply(c, { error: `Thread ${threadId} is busy with another run` }, 409);
}

/** The fields a `select` may name of a thread record (the SDK's ThreadSelectField). */
export const THREAD_FIELDS = [
  "thread_id",
  "created_at",
  "updated_at",
  "state_updated_at",
  "metadata",
  "config",
  "context",
  "status",
  "values",
  "interrupts",
] as const;

/** The fields a `select` may name of a thread state (the SDK's ThreadStateSelectField), and `values.<key>`. */
export const STATE_FIELDS = [
  "values",
  "next",
  "tasks",
  "checkpoint",
  "metadata",
  "created_at",
  "parent_checkpoint",
  "interrupts",
] as const;

/**
 * Only the fields `select` names of `record` (`values.<key>`: that key of
 * its values), as the Agent Server answers a `select`; `record` as it is
 * when `select` names none. A field the record has not is left out.
 */
export function selected(record: object, select: readonly string[]): unknown {
  if (select.length === 0) return record;
  const source = record as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const whole = select.includes("values");
  for (const field of select) {
    if (field.startsWith("values.")) {
      const key = field.slice("values.".length);
      const values = source.values as Record<string, unknown> | null | undefined;
      if (whole || typeof values !== "object" || values === null || !Object.hasOwn(values, key)) continue;
      out.values = { ...(out.values as Record<string, unknown> | undefined), [key]: values[key] };
    } else if (Object.hasOwn(source, field)) {
      out[field] = source[field];
    }
  }
  return out;
}
