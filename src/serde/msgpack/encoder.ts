/** Writing: values lowered to msgpack with this format's extension records. */
import { isDeltaSnapshot } from "@langchain/langgraph-checkpoint";
import { EXT, NEGATIVE_ZERO_MARKER, UNDEFINED_MARKER, isWellFormed, tagged, utf16Bytes } from "./wire.js";
import { LC_NAMESPACES, MAX_DEPTH, type RegisteredClass } from "./options.js";
import { binaryTypeNames } from "./builtins.js";
import { setOwn } from "./diagnostics.js";
import { isPlainObject } from "../../core/guards.js";

// ---------------------------------------------------------------------------
// Writing

/**
 * Why the encoder refused a value: a function, another type msgpack has no
 * place for (a symbol), an unregistered class (`class-json` when it has
 * `toJSON()`), a LangChain object whose record load() could not revive
 * (`lc-record`: not a constructor record; `lc-id`: outside its namespaces).
 */
export type UnencodableReason = "function" | "type" | "class" | "class-json" | "lc-record" | "lc-id";

/**
 * Thrown inside the encoder for a value nobody could read back. It carries
 * facts, not words: the words load with the explanation (explain.ts), only
 * when an encode fails, so they stay out of every app's first download.
 */
export class Unencodable {
  constructor(
    readonly value: unknown,
    readonly reason: UnencodableReason,
    /** The class name, for the class and LangChain reasons. */
    readonly name = "",
    /** The record's type (`lc-record`) or id (`lc-id`). */
    readonly detail = "",
  ) {}
}

/** Thrown inside the encoder past {@link MAX_DEPTH}. */
export class TooDeep {}

/**
 * Lowers a value to what msgpackr packs exactly: plain objects, arrays,
 * primitives, `Uint8Array`, `Date`, and {@link tagged} wire values. User
 * objects are never modified; a container is copied only when one of its
 * children had to be replaced.
 */
export class Encoder {
  private depth = 0;
  /** Values met so far that JSON cannot carry (see {@link langChain}). */
  private nonJson = 0;

  constructor(private readonly classes: ReadonlyMap<object, RegisteredClass>) {}

  lower(value: unknown): unknown {
    switch (typeof value) {
      case "string":
        // UTF-8 has no lone surrogate: such a string keeps its code units (EXT.UTF16).
        return isWellFormed(value) ? value : tagged(EXT.UTF16, utf16Bytes(value));
      case "boolean":
        return value;
      case "bigint":
        this.nonJson++;
        return value;
      case "number":
        if (value === 0) {
          if (1 / value > 0) return value;
          // msgpackr writes -0 as the integer 0.
          this.nonJson++;
          return NEGATIVE_ZERO_MARKER;
        }
        if (value - value !== 0) this.nonJson++; // NaN, ±Infinity (float64 keeps them)
        return value;
      case "undefined":
        this.nonJson++;
        return UNDEFINED_MARKER;
      case "object":
        return value === null ? null : this.object(value);
      case "function":
        throw new Unencodable(value, "function");
      default:
        throw new Unencodable(value, "type");
    }
  }

  private object(value: object): unknown {
    if (++this.depth > MAX_DEPTH) throw new TooDeep();
    const prototype: unknown = Object.getPrototypeOf(value);
    const lowered =
      prototype === Array.prototype
        ? this.array(value as unknown[])
        : prototype === Object.prototype || prototype === null
          ? this.plain(value as Record<string, unknown>)
          : this.instance(value, prototype as object);
    this.depth--;
    return lowered;
  }

  private array(value: readonly unknown[]): unknown[] {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const child = value[i];
      const lowered = this.lower(child);
      if (copy) copy.push(lowered);
      else if (lowered !== child) {
        copy = value.slice(0, i);
        copy.push(lowered);
      }
    }
    return copy ?? (value as unknown[]);
  }

  private plain(value: Record<string, unknown>): unknown {
    const keys = Object.keys(value);
    let copy: Record<string, unknown> | undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      // msgpackr decodes a "__proto__" key as "__proto_" (clobbering a real
      // "__proto_" key), and a key with a lone surrogate as U+FFFD: such
      // objects get their own extension instead, their keys written as values.
      if (key === "__proto__" || !isWellFormed(key)) return this.protoObject(value, keys);
      const child = value[key];
      const lowered = this.lower(child);
      if (copy) copy[key] = lowered;
      else if (lowered !== child) {
        copy = {};
        for (let j = 0; j < i; j++) copy[keys[j]!] = value[keys[j]!];
        copy[key] = lowered;
      }
    }
    return copy ?? value;
  }

  private protoObject(value: Record<string, unknown>, keys: readonly string[]): unknown {
    const flat: unknown[] = [];
    for (const key of keys) flat.push(this.lower(key), this.lower(value[key]));
    return tagged(EXT.PROTO_OBJECT, flat);
  }

  /** Anything whose prototype is not Object.prototype, null or Array.prototype. */
  private instance(value: object, prototype: object): unknown {
    const exact = this.nonJsonInstance(value, prototype);
    if (exact !== undefined) {
      this.nonJson++;
      return exact;
    }
    return this.jsonShapedInstance(value, prototype);
  }

  /** Registered classes and the built-ins JSON cannot carry; undefined if `value` is neither. */
  private nonJsonInstance(value: object, prototype: object): unknown {
    const registered = this.classes.get(prototype);
    if (registered) {
      const data = registered.hasHooks
        ? (value as { toMsgpack(): unknown }).toMsgpack()
        : registered.isError
          ? errorFields(value as Error)
          : ownFields(value);
      return tagged(EXT.CLASS, [registered.name, this.lower(data)]);
    }
    if (prototype === Date.prototype) return value; // msgpack timestamp (ext -1)
    // A Node Buffer is a Uint8Array too; it reads back as a plain Uint8Array.
    if (value instanceof Uint8Array) return value;
    if (prototype === Map.prototype) {
      const flat: unknown[] = [];
      for (const [key, entry] of value as Map<unknown, unknown>) flat.push(this.lower(key), this.lower(entry));
      return tagged(EXT.MAP, flat);
    }
    if (prototype === Set.prototype) {
      const members: unknown[] = [];
      for (const member of value as Set<unknown>) members.push(this.lower(member));
      return tagged(EXT.SET, members);
    }
    if (prototype === RegExp.prototype) {
      const { source, flags } = value as RegExp;
      return tagged(EXT.REGEXP, [this.lower(source), flags]);
    }
    if (value instanceof Error) return tagged(EXT.ERROR, this.lower(errorFields(value)));
    const binary = binaryTypeNames().get(prototype);
    if (binary) {
      const bytes =
        binary === "ArrayBuffer"
          ? new Uint8Array(value as ArrayBuffer)
          : new Uint8Array(
              (value as ArrayBufferView).buffer,
              (value as ArrayBufferView).byteOffset,
              (value as ArrayBufferView).byteLength,
            );
      return tagged(EXT.BINARY, [binary, bytes]);
    }
    if (isDeltaSnapshot(value)) return tagged(EXT.DELTA_SNAPSHOT, this.lower(value.value));
    return undefined;
  }

  /** LangGraph's classes JsonPlus stores as plain shapes, LangChain objects, or an error. */
  private jsonShapedInstance(value: object, prototype: object): unknown {
    const lgName = (value as { lg_name?: unknown }).lg_name;
    if (lgName === "Send") {
      // JsonPlus's shape, which LangGraph turns back into a Send (`_isSendInterface`).
      const send = value as { node?: unknown; args?: unknown; timeout?: unknown };
      return this.plain(
        send.timeout === undefined
          ? { node: send.node, args: send.args }
          : { node: send.node, args: send.args, timeout: send.timeout },
      );
    }
    if (lgName === "Command") {
      // JsonPlus's shape (Command.toJSON() without turning nested Sends into
      // `lg_name` objects first): LangGraph rebuilds a Command from it.
      const command = value as { update?: unknown; resume?: unknown; goto?: unknown; graph?: unknown };
      const shape: Record<string, unknown> = {
        lg_name: "Command",
        update: command.update,
        resume: command.resume,
        goto: command.goto,
      };
      if (command.graph !== undefined) shape.graph = command.graph;
      return this.plain(shape);
    }
    if (lgName === "Overwrite") {
      return this.plain({ __overwrite__: (value as { __overwrite__?: unknown }).__overwrite__ });
    }
    if (isSerializableLike(value)) return this.langChain(value);
    if (Array.isArray(value) && isForeignBuiltIn(prototype, "Array")) return this.array(value);
    if (isForeignBuiltIn(prototype, "Object")) return this.plain(value as Record<string, unknown>);
    const json = typeof (value as { toJSON?: unknown }).toJSON === "function";
    throw new Unencodable(value, json ? "class-json" : "class", className(value));
  }

  /**
   * A LangChain `Serializable`: its `lc: 1` record, revived by load() on read.
   * load() parses JSON, so a record holding a value JSON cannot carry is
   * marked (EXT.LC_EXACT) for the reader's exact, slower path.
   */
  private langChain(value: { toJSON(): unknown }): unknown {
    const record = value.toJSON();
    if (!isPlainObject(record) || record.lc !== 1 || record.type !== "constructor") {
      const kind = isPlainObject(record) && typeof record.type === "string" ? `"${record.type}"` : "no constructor";
      throw new Unencodable(value, "lc-record", className(value), kind);
    }
    if (!isRevivableLcRecord(record)) {
      const id = Array.isArray(record.id) ? record.id.join("/") : String(record.id);
      throw new Unencodable(value, "lc-id", className(value), id);
    }
    const nonJsonBefore = this.nonJson;
    const lowered = this.lower(record);
    return tagged(this.nonJson > nonJsonBefore ? EXT.LC_EXACT : EXT.LC, lowered);
  }
}

/** Own enumerable string-keyed fields, as a fresh plain object. */
export function ownFields(value: object): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setOwn(fields, key, (value as Record<string, unknown>)[key]);
  return fields;
}

/** What an Error carries beyond its class; `props` are its own enumerable fields. */
export function errorFields(error: Error): Record<string, unknown> {
  const fields: Record<string, unknown> = { name: error.name, message: error.message };
  if (typeof error.stack === "string") fields.stack = error.stack;
  if (Object.hasOwn(error, "cause")) fields.cause = error.cause;
  if (error instanceof AggregateError) fields.errors = error.errors;
  const props = ownFields(error);
  if (Object.keys(props).length > 0) fields.props = props;
  return fields;
}

/** The test `@langchain/core` itself uses for Serializable objects. */
export function isSerializableLike(value: object): value is { toJSON(): unknown } {
  return "lc_serializable" in value && typeof (value as { toJSON?: unknown }).toJSON === "function";
}

/** An `lc: 1` constructor record that load() may instantiate. */
export function isRevivableLcRecord(
  value: unknown,
): value is { lc: 1; type: "constructor"; id: string[]; kwargs: object } {
  return (
    isPlainObject(value) &&
    value.lc === 1 &&
    value.type === "constructor" &&
    Array.isArray(value.id) &&
    value.id.length >= 2 &&
    value.id.every((part) => typeof part === "string") &&
    LC_NAMESPACES.has(value.id[0]) &&
    isPlainObject(value.kwargs)
  );
}

/** A plain object (or array) made in another realm, such as an iframe. */
export function isForeignBuiltIn(prototype: object, name: "Object" | "Array"): boolean {
  try {
    const root = name === "Object" ? prototype : Object.getPrototypeOf(prototype);
    return (
      root !== null &&
      Object.getPrototypeOf(root) === null &&
      typeof (prototype as { constructor?: unknown }).constructor === "function" &&
      (prototype as { constructor: { name: string } }).constructor.name === name
    );
  } catch {
    return false;
  }
}

/** The class name of `value` for error messages, never throwing (proxies and odd prototypes included). */
export function className(value: object): string {
  try {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    return typeof name === "string" && name ? name : "(anonymous class)";
  } catch {
    return "(unknown class)";
  }
}
