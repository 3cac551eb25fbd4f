/** Small helpers of the encoder and the reviver (property definition, malformed-payload errors). */
import { SerializationError } from "../../core/errors.js";

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
