/** The serializer's options, limits, and what its encoder and reviver share. */

/** The serializer's type tag (the first element of `dumpsTyped`). */
export const TYPE = "msgpack";

/**
 * Deepest nesting the encoder accepts. Far beyond real state, well within the
 * stack of the three recursive passes (encode, pack, unpack) in every
 * browser; hitting it almost always means a cycle, which is then located.
 */
export const MAX_DEPTH = 1000;

/** The only `lc` id roots `load()` revives (and so the only ones we write). */
export const LC_NAMESPACES: ReadonlySet<unknown> = new Set(["langchain_core", "langchain"]);

/**
 * A class whose instances `MsgpackSerializer` may store, listed in
 * {@link MsgpackSerializerOptions.types}.
 */
export type MsgpackClass = abstract new (...args: never[]) => unknown;

/** Options of `MsgpackSerializer`. */
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
export interface RegisteredClass {
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
export const LOAD_OPTIONS = {
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
 * Refuses, with a `SerializationError` that names the problem and its
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
 * class Cart { items: string[] = []; }
 * const serde = new MsgpackSerializer({ types: [Cart] });
 * const [type, bytes] = await serde.dumpsTyped({ cart: new Cart(), at: new Date() });
 * const value = await serde.loadsTyped(type, bytes); // value.cart instanceof Cart
 * ```
 */
