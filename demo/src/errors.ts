/**
 * Error text for people: what went wrong in a sentence, never a stack or a
 * JSON dump. Errors reach the page live (a thrown Error) or from the saver
 * after a reload (a task's error, revived by the serializer), so both shapes
 * are handled.
 */

/** True for the error a stopped run ends with. */
export function isAbort(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return (
    name === "AbortError" ||
    (error instanceof Error && /\babort(ed)?\b/i.test(error.message) && /signal|operation|stream/i.test(error.message))
  );
}

/** A sentence saying what went wrong. */
export function errorText(error: unknown): string {
  if (isAbort(error)) return "Stopped.";
  const raw =
    error instanceof Error
      ? error.message
      : typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string"
        ? (error as { message: string }).message
        : typeof error === "string"
          ? error
          : "";
  // By name: a task's error read back from the saver is no longer a TypeError instance.
  const name = (error as { name?: unknown } | null)?.name;
  if ((error instanceof TypeError || name === "TypeError") && /fetch|network/i.test(raw)) {
    return "Could not reach the model endpoint: check its URL in Settings, and the network.";
  }
  const text = raw.replace(/\s+/g, " ").trim();
  if (!text) return "Something went wrong, with no message to say what.";
  // A message that still is (or ends in) JSON: keep its own "message" when there is one.
  const json = /[{[].*$/.exec(text)?.[0];
  if (json) {
    try {
      const parsed = JSON.parse(json) as { error?: { message?: unknown }; message?: unknown };
      const inner = parsed.error?.message ?? parsed.message;
      if (typeof inner === "string")
        return `${text.slice(0, text.length - json.length).replace(/[:\s]+$/, "")}: ${inner}`.replace(/^: /, "");
    } catch {
      // Not JSON after all: the text as it is.
    }
  }
  return text.length > 400 ? `${text.slice(0, 399)}…` : text;
}

/** An error's own message, as it is (for "Could not …: <message>" lines and the fatal page). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
