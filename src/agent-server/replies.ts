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
