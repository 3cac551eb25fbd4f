/** Small helpers, and the paths and cycles named in serialization errors. */
import { SerializationError } from "../../core/errors.js";
import { MAX_DEPTH } from "./options.js";

// ---------------------------------------------------------------------------
// Helpers

/** `payload` as an array, else the malformed-extension error naming `what`. */
export function expectArray(payload: unknown, what: string): unknown[] {
  if (!Array.isArray(payload)) throw malformed(what);
  return payload;
}

/** The error for an extension payload of the wrong shape (corrupt or crafted bytes). */
export function malformed(what: string, cause?: unknown): SerializationError {
  return new SerializationError(`Corrupt MsgpackSerializer payload: malformed ${what} extension.`, { cause });
}

/** Sets an own data property; `__proto__` too, without touching the prototype. */
export function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

/** Own enumerable fields, defined like class fields (no setters run, `__proto__` stays data). */
export function defineFields(target: object, fields: Record<string, unknown>): void {
  for (const key of Object.keys(fields)) {
    Object.defineProperty(target, key, { value: fields[key], writable: true, enumerable: true, configurable: true });
  }
}

/** Non-enumerable own property, as engines define an Error's message/stack/cause. */
export function defineHidden(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: false, configurable: true });
}

/** Diagnostics must not replace the error they explain (a getter may throw). */
export function safely<T>(diagnose: () => T): T | undefined {
  try {
    return diagnose();
  } catch {
    return undefined;
  }
}

/** The children the diagnostics below follow: what the encoder would visit. */
export function childrenOf(value: object): Array<[string, unknown]> {
  if (value instanceof Map) {
    return [...value].flatMap(([key, entry], i): Array<[string, unknown]> => [
      [`<Map key #${i}>`, key],
      [`<Map value #${i}>`, entry],
    ]);
  }
  if (value instanceof Set) return [...value].map((member, i): [string, unknown] => [`<Set member #${i}>`, member]);
  if (Array.isArray(value)) return value.map((child, i): [string, unknown] => [`[${i}]`, child]);
  const children = Object.keys(value).map((key): [string, unknown] => [
    /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`,
    (value as Record<string, unknown>)[key],
  ]);
  if (value instanceof Error && Object.hasOwn(value, "cause")) {
    children.push([".cause", value.cause]);
  }
  return children;
}

/** Path (`$.a[0].b`) to the first value matching `match`, for error messages. */
export function findPath(root: unknown, match: (value: unknown) => boolean): string | undefined {
  const done = new Set<object>();
  const visit = (value: unknown, path: string, depth: number): string | undefined => {
    if (match(value)) return path;
    if (typeof value !== "object" || value === null || done.has(value) || depth > MAX_DEPTH) return undefined;
    done.add(value);
    for (const [step, child] of childrenOf(value)) {
      const found = visit(child, path + step, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return visit(root, "$", 0);
}

/** Path of a reference back to an ancestor, if the value has a cycle. */
export function findCycle(root: unknown): string | undefined {
  const ancestors = new Set<object>();
  const done = new Set<object>();
  const visit = (value: unknown, path: string): string | undefined => {
    if (typeof value !== "object" || value === null || done.has(value)) return undefined;
    if (ancestors.has(value)) return path;
    ancestors.add(value);
    for (const [step, child] of childrenOf(value)) {
      const found = visit(child, path + step);
      if (found) return found;
    }
    ancestors.delete(value);
    done.add(value);
    return undefined;
  };
  return visit(root, "$");
}
