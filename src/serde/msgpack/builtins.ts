/** Built-in types: errors, binary arrays, and the prototypes this format treats as its own. */
import type { MsgpackClass } from "./options.js";
import { defineFields, defineHidden, expectArray, malformed, setOwn } from "./diagnostics.js";
import { isPlainObject } from "../../core/guards.js";

/** The built-in Error classes revived by name; any other name becomes a plain `Error` (or a registered class). */
export const ERROR_TYPES: ReadonlyMap<string, ErrorConstructor> = new Map<string, ErrorConstructor>([
  ["Error", Error],
  ["TypeError", TypeError],
  ["RangeError", RangeError],
  ["SyntaxError", SyntaxError],
  ["ReferenceError", ReferenceError],
  ["EvalError", EvalError],
  ["URIError", URIError],
]);

/**
 * An Error from its fields: the built-in class named `name` (else `Error`),
 * or a registered subclass, with message, stack and cause as non-enumerable
 * own properties, as the engine makes them.
 */
export function reviveError(payload: unknown, Class: MsgpackClass | undefined): Error {
  if (!isPlainObject(payload)) throw malformed("Error");
  const name = typeof payload.name === "string" ? payload.name : "Error";
  const message = typeof payload.message === "string" ? payload.message : "";
  const errors = Array.isArray(payload.errors) ? payload.errors : [];
  let error: Error;
  if (Class) {
    // A real error object (engines and Error.isError tell those apart) with
    // the subclass's prototype, without running the subclass's constructor.
    error = (
      Class.prototype instanceof AggregateError
        ? Reflect.construct(AggregateError, [errors, message], Class)
        : Reflect.construct(Error, [message], Class)
    ) as Error;
  } else if (name === "AggregateError") {
    error = new AggregateError(errors, message);
  } else {
    error = new (ERROR_TYPES.get(name) ?? Error)(message);
  }
  const props = payload.props;
  if (props !== undefined && !isPlainObject(props)) throw malformed("Error");
  // An own enumerable `name` (a class field) comes back with the other fields, in order.
  if (error.name !== name && !(props && Object.hasOwn(props, "name"))) {
    defineHidden(error, "name", name);
  }
  if (typeof payload.stack === "string") defineHidden(error, "stack", payload.stack);
  if (Object.hasOwn(payload, "cause")) defineHidden(error, "cause", payload.cause);
  if (props) defineFields(error, props);
  return error;
}

let binaryTypes: ReadonlyMap<object, string> | undefined;
let binaryConstructors: ReadonlyMap<string, new (buffer: ArrayBuffer) => unknown> | undefined;

/** Typed arrays (but Uint8Array), DataView and ArrayBuffer, by prototype. */
export function binaryTypeNames(): ReadonlyMap<object, string> {
  if (!binaryTypes) {
    const constructors: Array<[string, new (buffer: ArrayBuffer) => unknown]> = [
      ["Int8Array", Int8Array],
      ["Uint8ClampedArray", Uint8ClampedArray],
      ["Int16Array", Int16Array],
      ["Uint16Array", Uint16Array],
      ["Int32Array", Int32Array],
      ["Uint32Array", Uint32Array],
      ["Float32Array", Float32Array],
      ["Float64Array", Float64Array],
      ["BigInt64Array", BigInt64Array],
      ["BigUint64Array", BigUint64Array],
      ["DataView", DataView],
    ];
    binaryConstructors = new Map(constructors);
    binaryTypes = new Map<object, string>([
      ...constructors.map(([name, Type]) => [Type.prototype as object, name] as [object, string]),
      [ArrayBuffer.prototype, "ArrayBuffer"],
    ]);
  }
  return binaryTypes;
}

/** An `ArrayBuffer` or typed array from its `[type name, bytes]` extension payload. */
export function reviveBinary(payload: unknown): unknown {
  const [name, bytes] = expectArray(payload, "binary");
  if (typeof name !== "string" || !(bytes instanceof Uint8Array)) throw malformed("binary");
  binaryTypeNames();
  // Decoded `bin` values own an exactly-sized buffer (copyBuffers), but make sure.
  const buffer =
    bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
      ? (bytes.buffer as ArrayBuffer)
      : (bytes.slice().buffer as ArrayBuffer);
  if (name === "ArrayBuffer") return buffer;
  const Type = binaryConstructors!.get(name);
  if (!Type) throw malformed(`binary (${name})`);
  try {
    return new Type(buffer);
  } catch (error) {
    throw malformed(`binary (${name})`, error);
  }
}

let builtIns: ReadonlySet<object> | undefined;

/** Prototypes the encoder handles itself, so they cannot be registered. */
export function builtInPrototypes(): ReadonlySet<object> {
  builtIns ??= new Set<object>([
    Object.prototype,
    Array.prototype,
    Function.prototype,
    Map.prototype,
    Set.prototype,
    WeakMap.prototype,
    WeakSet.prototype,
    Date.prototype,
    RegExp.prototype,
    Promise.prototype,
    Error.prototype,
    AggregateError.prototype,
    Uint8Array.prototype,
    ...[...ERROR_TYPES.values()].map((Type) => Type.prototype),
    ...binaryTypeNames().keys(),
  ]);
  return builtIns;
}

/** Restores placeholder strings from `Revival.loadLangChain` in load()'s result. */
export function placeholderRestorer(prefix: string, kept: readonly unknown[]): (value: unknown) => unknown {
  const seen = new Set<object>();
  const restore = (value: unknown): unknown => {
    if (typeof value === "string") {
      return value.startsWith(prefix) ? kept[Number(value.slice(prefix.length))] : value;
    }
    if (typeof value !== "object" || value === null || seen.has(value)) return value;
    seen.add(value);
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const child = object[key];
      const restored = restore(child);
      if (restored !== child) setOwn(object, key, restored);
    }
    return value;
  };
  return restore;
}
