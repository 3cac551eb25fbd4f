/**
 * How the run routes answer over HTTP: the headers naming a run (as the
 * Agent Server sends them), a run's events as server-sent events, only the
 * events of some stream modes, and the query flags the SDK sends.
 */
import type { Context } from "hono";
import type { SentEvent } from "./records.js";
import type { StreamMode } from "./stream.js";

/**
 * The headers the Agent Server answers a run's request with: `Content-Location`,
 * the run's path, from which the SDK reads the run and thread ids
 * (`onRunCreated`, useStream's `onCreated` and its rejoin key), and `Location`,
 * where the answer goes on: `.../stream` for a stream (the SDK reconnects there
 * with `Last-Event-ID` when the stream breaks before the run ends), `.../join`
 * for a run waited on.
 */
export function runHeaders(
  run: { thread_id: string; run_id: string },
  rest: "stream" | "join",
): { Location: string; "Content-Location": string } {
  // Location is requested again as it is: a URL path, its thread id encoded as the SDK encodes a segment.
  const path = `/threads/${encodeURIComponent(run.thread_id)}/runs/${encodeURIComponent(run.run_id)}`;
  return {
    Location: `${path}/${rest}`,
    "Content-Location": `/threads/${headerSafe(run.thread_id)}/runs/${run.run_id}`,
  };
}

/**
 * `segment` for a header: what a header value cannot carry (a control
 * character, a character above U+00FF) percent-encoded as UTF-8, as in a URL.
 * The rest stays as it is: the SDK reads the thread id out of a run's
 * `Content-Location` without decoding it (`onRunCreated`).
 */
function headerSafe(segment: string): string {
  return segment.replace(/[^\u0020-\u00ff]+/g, (part) => encodeURIComponent(part));
}

/**
 * A query flag as the Agent Server reads one: "true", "1" or "yes", in any
 * case (a Python client's `True` too); anything else, or none, is false.
 */
export function queryFlag(c: Context, name: string): boolean {
  return ["true", "1", "yes"].includes(c.req.query(name)?.toLowerCase() ?? "");
}

/**
 * The events of `modes` among `events` (a subgraph's `<mode>|<namespace>`
 * too; `messages-tuple` is sent as `messages`), and the run's own: its
 * `metadata` and an `error`. Their ids stay: `Last-Event-ID` still resumes.
 */
export async function* onlyModes(
  events: AsyncGenerator<SentEvent>,
  modes: readonly StreamMode[],
): AsyncGenerator<SentEvent> {
  const names = new Set<string>([
    "metadata",
    "error",
    ...modes.map((mode) => (mode === "messages-tuple" ? "messages" : mode)),
  ]);
  try {
    for await (const event of events) if (names.has(event.event.split("|")[0]!)) yield event;
  } finally {
    await events.return(undefined);
  }
}

/**
 * `events`, then the `end` event the Agent Server ends a run's stream with:
 * the run's final status (null when its record is gone: a rolled-back run, or
 * one deleted with its thread). The SDK takes it as the run's end; without it,
 * it asks for the run once more to learn that the run has ended. It has no
 * id: it is no event of the run's, and resuming from it would skip nothing.
 */
export async function* withEnd(
  events: AsyncGenerator<SentEvent>,
  final: () => Promise<{ run_id: string; status: string } | undefined>,
): AsyncGenerator<{ id?: number; event: string; data: string }> {
  try {
    yield* events;
  } finally {
    await events.return(undefined);
  }
  const record = await final();
  const ended = record && record.status !== "pending" && record.status !== "running";
  yield { event: "end", data: JSON.stringify(ended ? { run_id: record.run_id, status: record.status } : null) };
}

/**
 * A server-sent-events response of `events`; the run goes on if the client
 * leaves. `onCancel` is told at once when it leaves (`events` ends only at
 * its next event: one waiting for a run to start would wait on).
 */
export function sse(
  events: AsyncGenerator<{ id?: number | string; event: string; data: string }>,
  headers: Record<string, string>,
  onCancel?: () => void,
): Response {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await events.next();
      if (next.done) return controller.close();
      const { id, event, data } = next.value;
      const idLine = id === undefined ? "" : `id: ${id}\n`;
      controller.enqueue(encoder.encode(`${idLine}event: ${event}\ndata: ${data}\n\n`));
    },
    async cancel() {
      onCancel?.();
      await events.return(undefined);
    },
  });
  return new Response(stream, {
    headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-store", ...headers },
  });
}
