/**
 * `MsgpackSerializer`: LangGraph's `SerializerProtocol` on msgpackr, type tag
 * `"msgpack"`. The bytes (header, extension codes, msgpackr options) are
 * defined in `msgpack-types.ts`; this module turns values into that shape and
 * back.
 *
 * Writing is two passes: {@link Encoder} walks the value once, lowering what
 * msgpackr cannot store exactly (`Map`, `Set`, `undefined`, `-0`, errors,
 * LangChain objects, registered classes…) into tagged wire values and
 * rejecting what nobody could read back (functions, cycles, unknown classes);
 * then msgpackr packs the result. The walk is needed because msgpackr has no
 * per-value hook for the cases that matter: it writes every `Map` as a plain
 * map before consulting extensions, `-0` as the integer 0, `undefined` as
 * Python's ext code 0, silently packs unknown classes as plain objects, and
 * overflows the stack on a cycle. The walk copies only the objects on the
 * path to a value it had to replace, so untouched data is packed in place.
 *
 * Reading is msgpackr's single pass with our extension readers, plus, only
 * when the payload holds LangChain objects or classes with `fromMsgpack`, a
 * second step: each LangChain record is revived by `load()` from
 * `@langchain/core/load` (which is async), `fromMsgpack` runs on revived
 * data, and the results are put in place of their placeholders.
 *
 * @module
 */
import { load } from "@langchain/core/load";
import {
  DeltaSnapshot,
  JsonPlusSerializer,
  isDeltaSnapshot,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { SerializationError } from "../../core/errors.js";
import {
  EXT,
  NEGATIVE_ZERO_MARKER,
  UNDEFINED_MARKER,
  packPayload,
  tagged,
  unpackPayload,
  type ExtensionReader,
  type PayloadCode,
} from "./wire.js";

/** The type tag this serializer writes and reads. */
const TYPE = "msgpack";

/**
 * Deepest nesting the encoder accepts. Far beyond real state, well within the
 * stack of the three recursive passes (encode, pack, unpack) in every
 * browser; hitting it almost always means a cycle, which is then located.
 */
const MAX_DEPTH = 1000;

/** The only `lc` id roots `load()` revives (and so the only ones we write). */
const LC_NAMESPACES: ReadonlySet<unknown> = new Set(["langchain_core", "langchain"]);

/**
 * A class whose instances {@link MsgpackSerializer} may store, listed in
 * {@link MsgpackSerializerOptions.types}.
 */
export type MsgpackClass = abstract new (...args: never[]) => unknown;

/** Options of {@link MsgpackSerializer}. */
export interface MsgpackSerializerOptions {
  /**
   * App classes whose instances round-trip as instances of the same class
   * (the counterpart of Python's `pickle_fallback`, without running code
   * named by the data: only classes listed here are ever instantiated).
   *
   * By default an instance is stored as its own enumerable string-keyed
   * fields and revived with those fields defined on
   * `Object.create(Class.prototype)`; the constructor is not called, and
   * private (`#`) fields and symbol keys are not kept. A class can instead
   * define both an instance method `toMsgpack(): unknown` (any storable
   * value) and a static `fromMsgpack(data): instance | Promise<instance>`.
   * Subclasses of `Error` also keep `message`, `stack` and `cause`.
   *
   * Instances are stored under the class name (`Class.name`, or a static
   * string `msgpackName` to keep stored data readable across renames and
   * minifiers), which must be unique. Only exact instances match: register a
   * subclass separately. `Send`, `Command` and `Overwrite` from
   * `@langchain/langgraph` may be listed to get real instances back instead
   * of the plain shapes JsonPlusSerializer uses.
   */
  types?: readonly MsgpackClass[];
}

/** A registered app class, as the encoder and the reader see it. */
interface RegisteredClass {
  readonly name: string;
  readonly Class: MsgpackClass;
  readonly prototype: object;
  /** Extends Error: store and restore message/stack/cause as well. */
  readonly isError: boolean;
  /** Has the `toMsgpack`/`fromMsgpack` pair. */
  readonly hasHooks: boolean;
  readonly fromMsgpack?: (data: unknown) => unknown;
}

/** Options for `load()`: nothing beyond the built-in allowlist, no secrets. */
const LOAD_OPTIONS = {
  // A null-prototype map, so a crafted `{lc: 1, type: "secret", id: ["toString"]}`
  // finds nothing (load() tests `key in secretsMap`).
  secretsMap: Object.create(null) as Record<string, string>,
  secretsFromEnv: false,
  importMap: {},
  optionalImportsMap: {},
  optionalImportEntrypoints: [],
  // load()'s default is 50; our own limit applies to what we wrote.
  maxDepth: MAX_DEPTH + 2,
};

/**
 * LangGraph serializer on MessagePack (msgpackr): lossless for more types
 * than `JsonPlusSerializer`, smaller, and much faster on plain data (on
 * message-heavy state both spend most of their time in LangChain's own
 * `toJSON()` and `load()`).
 *
 * Round-trips, with class identity: LangChain messages and other
 * `Serializable` objects (as the `lc: 1` constructor records JsonPlus writes,
 * revived by `load()` from `@langchain/core/load`, which only instantiates
 * `langchain_core`/`langchain` classes), `DeltaSnapshot`, `Map`, `Set`,
 * `Date` (to the millisecond), `Uint8Array` (MessagePack `bin`) and other
 * typed arrays, `bigint`, `undefined` distinct from `null` (keys stay
 * present), `-0`, `NaN`, `±Infinity`, `RegExp`, `Error` (name, message, stack,
 * cause, own fields) and classes registered with `types`. `Send`, `Command`
 * and `Overwrite` are stored in JsonPlus's plain shapes (`{node, args}`,
 * `{lg_name: "Command", …}`, `{__overwrite__: v}`), which LangGraph
 * recognises structurally, unless their classes are registered. An own
 * `__proto__` key is kept as data and never becomes a prototype.
 *
 * Refuses, with a {@link SerializationError} that names the problem and its
 * path: functions, symbols, cycles, instances of unknown classes (they would
 * otherwise come back as plain objects), and LangChain objects `load()` could
 * not revive. Rows tagged `"json"` or `"bytes"` (written by
 * `JsonPlusSerializer`) are read through `JsonPlusSerializer`.
 *
 * Needs no `eval`/`new Function`, so it works under a strict
 * Content-Security-Policy. Values inside a LangChain object's kwargs go
 * through the object's own `toJSON()`, which flattens non-JSON values there
 * (a `Date` in `additional_kwargs` becomes `{}`, as with JsonPlus).
 *
 * @example
 * ```ts
 * import { MsgpackSerializer } from "langgraph-checkpoint-indexeddb";
 *
 * class Cart { items: string[] = []; }
 * const serde = new MsgpackSerializer({ types: [Cart] });
 * const [type, bytes] = await serde.dumpsTyped({ cart: new Cart(), at: new Date() });
 * const value = await serde.loadsTyped(type, bytes); // value.cart instanceof Cart
 * ```
 */
export class MsgpackSerializer implements SerializerProtocol {
  readonly #byPrototype = new Map<object, RegisteredClass>();
  readonly #byName = new Map<string, RegisteredClass>();
  #jsonPlus: JsonPlusSerializer | undefined;

  /**
   * @param options App classes to round-trip; see {@link MsgpackSerializerOptions}.
   * @throws TypeError when a listed class is built in, anonymous, listed
   *   twice under one name, or defines only one of `toMsgpack`/`fromMsgpack`.
   */
  constructor(options: MsgpackSerializerOptions = {}) {
    for (const Class of options.types ?? []) this.#register(Class);
  }

  /**
   * Serializes `value` to `["msgpack", bytes]`. The bytes are a fresh,
   * exactly-sized array: format header (`0xC1 0x01`) then one MessagePack value.
   *
   * @throws SerializationError for a function, symbol, cycle, unknown class
   *   or LangChain object that cannot be revived, naming where it is.
   */
  async dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    let lowered: unknown;
    try {
      lowered = new Encoder(this.#byPrototype).lower(value);
    } catch (error) {
      throw encodeError(error, value);
    }
    try {
      return [TYPE, packPayload(lowered)];
    } catch (error) {
      throw new SerializationError(`msgpackr could not pack the value: ${errorMessage(error)}`, { cause: error });
    }
  }

  /**
   * Reads a value written by {@link dumpsTyped} (`"msgpack"`), or by
   * `JsonPlusSerializer` (`"json"`, `"bytes"`).
   *
   * @throws SerializationError for an unknown type tag, corrupt or truncated
   *   bytes, a payload from a newer format version, a LangChain record outside
   *   the allowlist, or a registered class this serializer does not know.
   */
  async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    if (type === TYPE) return this.#loadMsgpack(data);
    if (type === "json" || type === "bytes") {
      this.#jsonPlus ??= new JsonPlusSerializer();
      try {
        return await this.#jsonPlus.loadsTyped(type, data);
      } catch (error) {
        throw new SerializationError(`Could not read a "${type}" row with JsonPlusSerializer: ${errorMessage(error)}`, {
          cause: error,
        });
      }
    }
    throw new SerializationError(
      `Unknown serialization type "${type}": MsgpackSerializer reads "msgpack", and "json"/"bytes" through JsonPlusSerializer. Encrypted rows ("…+aes-gcm") need EncryptedSerializer.`,
    );
  }

  async #loadMsgpack(data: Uint8Array | string): Promise<unknown> {
    if (!(data instanceof Uint8Array)) {
      throw new SerializationError(`A "msgpack" row must be bytes (Uint8Array), got ${typeof data}.`);
    }
    const revival = new Revival(this.#byName);
    let root: unknown;
    try {
      root = unpackPayload(data, revival);
    } catch (error) {
      if (error instanceof SerializationError) throw error;
      throw new SerializationError(`Corrupt MsgpackSerializer payload (${data.length} bytes): ${errorMessage(error)}`, {
        cause: error,
      });
    }
    try {
      return await revival.finish(root);
    } catch (error) {
      if (error instanceof SerializationError) throw error;
      throw new SerializationError(`Could not revive a MsgpackSerializer payload: ${errorMessage(error)}`, { cause: error });
    }
  }

  #register(Class: MsgpackClass): void {
    if (typeof Class !== "function" || typeof Class.prototype !== "object" || Class.prototype === null) {
      throw new TypeError(`MsgpackSerializer types must be classes, got ${String(Class)}.`);
    }
    const prototype = Class.prototype as object;
    if (builtInPrototypes().has(prototype)) {
      throw new TypeError(
        `${Class.name} is built in and MsgpackSerializer already stores it; remove it from types.`,
      );
    }
    const existing = this.#byPrototype.get(prototype);
    if (existing) return; // listed twice: same registration
    const statics = Class as unknown as { msgpackName?: unknown; fromMsgpack?: unknown };
    const name = typeof statics.msgpackName === "string" ? statics.msgpackName : Class.name;
    if (!name) {
      throw new TypeError(
        "A class in MsgpackSerializer types has no name; give it a static msgpackName string (stored data refers to classes by name).",
      );
    }
    if (this.#byName.has(name)) {
      throw new TypeError(
        `Two classes in MsgpackSerializer types are named "${name}" (a minifier can do this); give one a static msgpackName string.`,
      );
    }
    const hasTo = typeof (prototype as { toMsgpack?: unknown }).toMsgpack === "function";
    const fromMsgpack = statics.fromMsgpack;
    const hasFrom = typeof fromMsgpack === "function";
    if (hasTo !== hasFrom) {
      throw new TypeError(
        `${name} defines ${hasTo ? "toMsgpack() but no static fromMsgpack()" : "a static fromMsgpack() but no toMsgpack()"}; define both or neither.`,
      );
    }
    const entry: RegisteredClass = {
      name,
      Class,
      prototype,
      isError: prototype instanceof Error,
      hasHooks: hasTo,
      fromMsgpack: hasFrom ? (data) => (fromMsgpack as (data: unknown) => unknown).call(Class, data) : undefined,
    };
    this.#byPrototype.set(prototype, entry);
    this.#byName.set(name, entry);
  }
}

// ---------------------------------------------------------------------------
// Writing

/** Thrown inside the encoder for a value nobody could read back. */
class Unencodable {
  constructor(
    readonly value: unknown,
    /** What the value is ("a function (\"f\")"). */
    readonly what: string,
    /** What to do about it, if there is something to say. */
    readonly advice = "",
  ) {}
}

/** Thrown inside the encoder past {@link MAX_DEPTH}. */
class TooDeep {}

/**
 * Lowers a value to what msgpackr packs exactly: plain objects, arrays,
 * primitives, `Uint8Array`, `Date`, and {@link tagged} wire values. User
 * objects are never modified; a container is copied only when one of its
 * children had to be replaced.
 */
class Encoder {
  private depth = 0;
  /** Values met so far that JSON cannot carry (see {@link langChain}). */
  private nonJson = 0;

  constructor(private readonly classes: ReadonlyMap<object, RegisteredClass>) {}

  lower(value: unknown): unknown {
    switch (typeof value) {
      case "string":
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
        throw new Unencodable(value, `a function (${value.name ? `"${value.name}"` : "anonymous"})`);
      default:
        throw new Unencodable(value, `a ${typeof value} (${String(value)})`);
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
      // "__proto_" key); such objects get their own extension instead.
      if (key === "__proto__") return this.protoObject(value, keys);
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
    for (const key of keys) flat.push(key, this.lower(value[key]));
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
      return tagged(EXT.REGEXP, [source, flags]);
    }
    if (value instanceof Error) return tagged(EXT.ERROR, this.lower(errorFields(value)));
    const binary = binaryTypeNames().get(prototype);
    if (binary) {
      const bytes = binary === "ArrayBuffer"
        ? new Uint8Array(value as ArrayBuffer)
        : new Uint8Array((value as ArrayBufferView).buffer, (value as ArrayBufferView).byteOffset, (value as ArrayBufferView).byteLength);
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
        send.timeout === undefined ? { node: send.node, args: send.args } : { node: send.node, args: send.args, timeout: send.timeout },
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
    const name = className(value);
    const hint = typeof (value as { toJSON?: unknown }).toJSON === "function"
      ? ` It has toJSON(): store value.toJSON() yourself if that plain shape is what you want.`
      : "";
    throw new Unencodable(
      value,
      `an instance of class ${name}`,
      `It would come back as a plain object: register it with new MsgpackSerializer({ types: [${name}] }) to keep it a ${name}, or store plain data.${hint}`,
    );
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
      throw new Unencodable(
        value,
        `a LangChain ${className(value)} whose toJSON() gives a ${kind} record`,
        "Its lc_serializable is false, so load() could not revive it: register the class with types, or store plain data.",
      );
    }
    if (!isRevivableLcRecord(record)) {
      const id = Array.isArray(record.id) ? record.id.join("/") : String(record.id);
      throw new Unencodable(
        value,
        `a LangChain ${className(value)} with id ${id}`,
        "load() only revives langchain_core and langchain classes: register the class with types instead.",
      );
    }
    const nonJsonBefore = this.nonJson;
    const lowered = this.lower(record);
    return tagged(this.nonJson > nonJsonBefore ? EXT.LC_EXACT : EXT.LC, lowered);
  }
}

/** Own enumerable string-keyed fields, as a fresh plain object. */
function ownFields(value: object): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setOwn(fields, key, (value as Record<string, unknown>)[key]);
  return fields;
}

/** What an Error carries beyond its class; `props` are its own enumerable fields. */
function errorFields(error: Error): Record<string, unknown> {
  const fields: Record<string, unknown> = { name: error.name, message: error.message };
  if (typeof error.stack === "string") fields.stack = error.stack;
  if (Object.prototype.hasOwnProperty.call(error, "cause")) fields.cause = error.cause;
  if (error instanceof AggregateError) fields.errors = error.errors;
  const props = ownFields(error);
  if (Object.keys(props).length > 0) fields.props = props;
  return fields;
}

/** The test `@langchain/core` itself uses for Serializable objects. */
function isSerializableLike(value: object): value is { toJSON(): unknown } {
  return "lc_serializable" in value && typeof (value as { toJSON?: unknown }).toJSON === "function";
}

/** An `lc: 1` constructor record that load() may instantiate. */
function isRevivableLcRecord(value: unknown): value is { lc: 1; type: "constructor"; id: string[]; kwargs: object } {
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
function isForeignBuiltIn(prototype: object, name: "Object" | "Array"): boolean {
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

function className(value: object): string {
  try {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    return typeof name === "string" && name ? name : "(anonymous class)";
  } catch {
    return "(unknown class)";
  }
}

function encodeError(error: unknown, root: unknown): SerializationError {
  if (error instanceof Unencodable) {
    const path = safely(() => findPath(root, (value) => value === error.value)) ?? "$ (inside a toJSON() result)";
    const advice = error.advice ? ` ${error.advice}` : "";
    return new SerializationError(`MsgpackSerializer cannot store ${error.what} at ${path}.${advice}`);
  }
  if (error instanceof TooDeep) {
    const cycle = safely(() => findCycle(root));
    return new SerializationError(
      cycle
        ? `MsgpackSerializer cannot store a circular reference: ${cycle} refers back to an object that contains it. Break the cycle before saving.`
        : `MsgpackSerializer cannot store a value nested more than ${MAX_DEPTH} levels deep.`,
    );
  }
  if (error instanceof SerializationError) return error;
  return new SerializationError(`MsgpackSerializer could not serialize the value: ${errorMessage(error)}`, { cause: error });
}

// ---------------------------------------------------------------------------
// Reading

/** Stands in the decoded tree for a value that is revived after unpacking. */
class Pending {
  value: unknown;

  /** Met while stringifying a LangChain record for load(). */
  toJSON(): unknown {
    throw new SerializationError("A registered class inside a LangChain object's kwargs cannot be revived.");
  }
}

/** A LangChain record waiting for load(). */
class LangChainPending extends Pending {
  /** Inside another record: load() revives it as part of that one. */
  nested = false;

  constructor(
    readonly record: object,
    /** Holds values JSON cannot carry (written as EXT.LC_EXACT). */
    readonly exact: boolean,
  ) {
    super();
  }

  /** A record nested in the one being stringified: load() revives both. */
  override toJSON(): unknown {
    this.nested = true;
    return this.record;
  }
}

/** A registered class with `fromMsgpack`, which must see fully revived data. */
class ClassPending extends Pending {
  constructor(
    readonly fromMsgpack: (data: unknown) => unknown,
    readonly data: unknown,
  ) {
    super();
  }
}

/**
 * One decode: builds extension values while msgpackr reads (children before
 * parents), then {@link finish} resolves what needed async work.
 */
class Revival implements ExtensionReader {
  private readonly langChain: LangChainPending[] = [];
  private readonly deferred: ClassPending[] = [];
  /** Non-plain objects built here that may hold a {@link Pending}. */
  private readonly containers = new Set<object>();

  constructor(private readonly classes: ReadonlyMap<string, RegisteredClass>) {}

  read(code: PayloadCode, payload: unknown): unknown {
    switch (code) {
      case EXT.DELTA_SNAPSHOT:
        return this.container(new DeltaSnapshot(payload));
      case EXT.MAP: {
        const flat = expectArray(payload, "Map");
        if (flat.length % 2 !== 0) throw malformed("Map");
        const map = new Map<unknown, unknown>();
        for (let i = 0; i < flat.length; i += 2) map.set(flat[i], flat[i + 1]);
        return this.container(map);
      }
      case EXT.SET:
        return this.container(new Set(expectArray(payload, "Set")));
      case EXT.ERROR:
        return this.container(reviveError(payload, undefined));
      case EXT.REGEXP: {
        const [source, flags] = expectArray(payload, "RegExp");
        if (typeof source !== "string" || typeof flags !== "string") throw malformed("RegExp");
        try {
          return new RegExp(source, flags);
        } catch (error) {
          throw malformed("RegExp", error);
        }
      }
      case EXT.LC:
      case EXT.LC_EXACT: {
        if (!isRevivableLcRecord(payload)) {
          const id = isPlainObject(payload) && Array.isArray(payload.id) ? payload.id.join("/") : "(none)";
          throw new SerializationError(
            `Refusing to revive a LangChain record with id ${id}: only langchain_core and langchain constructor records are revived.`,
          );
        }
        const pending = new LangChainPending(payload, code === EXT.LC_EXACT);
        this.langChain.push(pending);
        return pending;
      }
      case EXT.CLASS:
        return this.registered(payload);
      case EXT.PROTO_OBJECT: {
        const flat = expectArray(payload, "object");
        if (flat.length % 2 !== 0) throw malformed("object");
        const object: Record<string, unknown> = {};
        for (let i = 0; i < flat.length; i += 2) {
          if (typeof flat[i] !== "string") throw malformed("object");
          setOwn(object, flat[i] as string, flat[i + 1]);
        }
        return object;
      }
      case EXT.BINARY:
        return reviveBinary(payload);
      default:
        throw malformed(`unknown (${String(code)})`);
    }
  }

  /** Resolves LangChain records and `fromMsgpack` classes, then puts them in place. */
  async finish(root: unknown): Promise<unknown> {
    if (this.langChain.length === 0 && this.deferred.length === 0) return root;
    if (this.langChain.length > 0) await this.loadLangChain();
    // Creation order is bottom-up, so a class's data never waits on a later one.
    for (const pending of this.deferred) {
      try {
        pending.value = await pending.fromMsgpack(this.fix(pending.data));
      } catch (error) {
        throw new SerializationError(`A registered class's fromMsgpack() failed: ${errorMessage(error)}`, {
          cause: error,
        });
      }
    }
    return this.fix(root);
  }

  private registered(payload: unknown): unknown {
    const [name, data] = expectArray(payload, "class");
    if (typeof name !== "string") throw malformed("class");
    const entry = this.classes.get(name);
    if (!entry) {
      throw new SerializationError(
        `This value holds an instance of the registered class "${name}", which this MsgpackSerializer does not know: pass it in new MsgpackSerializer({ types: [${name}] }).`,
      );
    }
    if (entry.fromMsgpack) {
      const pending = new ClassPending(entry.fromMsgpack, data);
      this.deferred.push(pending);
      return pending;
    }
    if (entry.isError) return this.container(reviveError(data, entry.Class));
    if (!isPlainObject(data)) throw malformed("class");
    const instance = Object.create(entry.prototype) as object;
    defineFields(instance, data);
    return this.container(instance);
  }

  /**
   * Remembers a non-plain object if something decoded before it is pending:
   * children are read before their parents, so if nothing is pending yet,
   * nothing inside it can be.
   */
  private container<T extends object>(value: T): T {
    if (this.langChain.length > 0 || this.deferred.length > 0) this.containers.add(value);
    return value;
  }

  /**
   * Revives the LangChain records with load(), one call per record (in
   * Chromium that is twice as fast as one call over an array of them).
   * Records nested in another record are left to load(), which revives kwargs
   * recursively. JSON cannot carry `undefined`, `NaN`, `±Infinity`, `-0` or
   * `bigint`, so in records marked exact they travel as unique placeholder
   * strings and are put back afterwards; other records take plain
   * JSON.stringify, several times faster than one with a replacer.
   */
  private async loadLangChain(): Promise<void> {
    const kept: unknown[] = [];
    const prefix = `\u0000lg-msgpack:${Math.random().toString(36).slice(2)}:`;
    // Called after toJSON(), so nested records arrive as records.
    const replacer = (_key: string, value: unknown): unknown => {
      if (
        value === undefined ||
        typeof value === "bigint" ||
        (typeof value === "number" && (!Number.isFinite(value) || (value === 0 && 1 / value < 0)))
      ) {
        kept.push(value);
        return prefix + String(kept.length - 1);
      }
      return value;
    };
    const restore = placeholderRestorer(prefix, kept);
    // Outer records were read after their inner ones: in reverse, an outer
    // record marks its inner records nested before their turn comes.
    for (let i = this.langChain.length - 1; i >= 0; i--) {
      const pending = this.langChain[i]!;
      if (pending.nested) continue;
      const placeholders = kept.length;
      let loaded: unknown;
      try {
        const json = pending.exact ? JSON.stringify(pending.record, replacer) : JSON.stringify(pending.record);
        loaded = await load<unknown>(json, LOAD_OPTIONS);
      } catch (error) {
        if (error instanceof SerializationError) throw error;
        throw new SerializationError(`Could not revive a LangChain object in this payload: ${errorMessage(error)}`, {
          cause: error,
        });
      }
      pending.value = kept.length > placeholders ? restore(loaded) : loaded;
    }
  }

  /** Replaces every {@link Pending} in a decoded value with its result, in place. */
  private fix(value: unknown): unknown {
    if (typeof value !== "object" || value === null) return value;
    if (value instanceof Pending) return value.value;
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype === Array.prototype) {
      const array = value as unknown[];
      for (let i = 0; i < array.length; i++) {
        const child = array[i];
        const fixed = this.fix(child);
        if (fixed !== child) array[i] = fixed;
      }
    } else if (prototype === Object.prototype || prototype === null) {
      const object = value as Record<string, unknown>;
      for (const key of Object.keys(object)) {
        const child = object[key];
        const fixed = this.fix(child);
        if (fixed !== child) setOwn(object, key, fixed);
      }
    } else if (this.containers.has(value)) {
      this.fixContainer(value);
    }
    return value;
  }

  private fixContainer(value: object): void {
    if (value instanceof Map || value instanceof Set) {
      const before = [...value.entries()];
      const after = before.map(([key, entry]) => [this.fix(key), this.fix(entry)] as const);
      if (after.some(([key, entry], i) => key !== before[i]![0] || entry !== before[i]![1])) {
        // Rebuilt, not patched: a replaced key or member must keep its position.
        value.clear();
        for (const [key, entry] of after) {
          if (value instanceof Map) value.set(key, entry);
          else value.add(key);
        }
      }
      return;
    }
    // DeltaSnapshot, Error (cause, errors, own fields), registered instances.
    for (const key of Object.getOwnPropertyNames(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (!descriptor || !("value" in descriptor)) continue;
      const fixed = this.fix(descriptor.value);
      if (fixed !== descriptor.value) Object.defineProperty(value, key, { value: fixed });
    }
  }
}

const ERROR_TYPES: ReadonlyMap<string, ErrorConstructor> = new Map<string, ErrorConstructor>([
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
function reviveError(payload: unknown, Class: MsgpackClass | undefined): Error {
  if (!isPlainObject(payload)) throw malformed("Error");
  const name = typeof payload.name === "string" ? payload.name : "Error";
  const message = typeof payload.message === "string" ? payload.message : "";
  const errors = Array.isArray(payload.errors) ? payload.errors : [];
  let error: Error;
  if (Class) {
    // A real error object (engines and Error.isError tell those apart) with
    // the subclass's prototype, without running the subclass's constructor.
    error = (Class.prototype instanceof AggregateError
      ? Reflect.construct(AggregateError, [errors, message], Class)
      : Reflect.construct(Error, [message], Class)) as Error;
  } else if (name === "AggregateError") {
    error = new AggregateError(errors, message);
  } else {
    error = new (ERROR_TYPES.get(name) ?? Error)(message);
  }
  const props = payload.props;
  if (props !== undefined && !isPlainObject(props)) throw malformed("Error");
  // An own enumerable `name` (a class field) comes back with the other fields, in order.
  if (error.name !== name && !(props && Object.prototype.hasOwnProperty.call(props, "name"))) {
    defineHidden(error, "name", name);
  }
  if (typeof payload.stack === "string") defineHidden(error, "stack", payload.stack);
  if (Object.prototype.hasOwnProperty.call(payload, "cause")) defineHidden(error, "cause", payload.cause);
  if (props) defineFields(error, props);
  return error;
}

let binaryTypes: ReadonlyMap<object, string> | undefined;
let binaryConstructors: ReadonlyMap<string, new (buffer: ArrayBuffer) => unknown> | undefined;

/** Typed arrays (but Uint8Array), DataView and ArrayBuffer, by prototype. */
function binaryTypeNames(): ReadonlyMap<object, string> {
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

function reviveBinary(payload: unknown): unknown {
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
function builtInPrototypes(): ReadonlySet<object> {
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

/** Restores placeholder strings from {@link Revival.loadLangChain} in load()'s result. */
function placeholderRestorer(prefix: string, kept: readonly unknown[]): (value: unknown) => unknown {
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

// ---------------------------------------------------------------------------
// Helpers

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function expectArray(payload: unknown, what: string): unknown[] {
  if (!Array.isArray(payload)) throw malformed(what);
  return payload;
}

function malformed(what: string, cause?: unknown): SerializationError {
  return new SerializationError(`Corrupt MsgpackSerializer payload: malformed ${what} extension.`, { cause });
}

/** Sets an own data property; `__proto__` too, without touching the prototype. */
function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

/** Own enumerable fields, defined like class fields (no setters run, `__proto__` stays data). */
function defineFields(target: object, fields: Record<string, unknown>): void {
  for (const key of Object.keys(fields)) {
    Object.defineProperty(target, key, { value: fields[key], writable: true, enumerable: true, configurable: true });
  }
}

/** Non-enumerable own property, as engines define an Error's message/stack/cause. */
function defineHidden(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: false, configurable: true });
}

/** Diagnostics must not replace the error they explain (a getter may throw). */
function safely<T>(diagnose: () => T): T | undefined {
  try {
    return diagnose();
  } catch {
    return undefined;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The children the diagnostics below follow: what the encoder would visit. */
function childrenOf(value: object): Array<[string, unknown]> {
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
  if (value instanceof Error && Object.prototype.hasOwnProperty.call(value, "cause")) {
    children.push([".cause", value.cause]);
  }
  return children;
}

/** Path (`$.a[0].b`) to the first value matching `match`, for error messages. */
function findPath(root: unknown, match: (value: unknown) => boolean): string | undefined {
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
function findCycle(root: unknown): string | undefined {
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
