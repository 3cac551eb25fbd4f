/**
 * `MsgpackSerializer`: LangGraph's `SerializerProtocol` on msgpackr, type tag
 * `"msgpack"`. The bytes (header, extension codes, msgpackr options) are
 * defined in `wire.ts`; this module turns values into that shape and
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
 * What lives in serde/msgpack/: this serializer, its options and class
 * registration (options.ts), the encoder, the reviver, the built-in types
 * and diagnostics; the wire format (EXT codes, header, Packr options) in
 * wire.ts. It imports only core/.
 */
import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { SerializationError } from "../../core/errors.js";
import { packPayload, RefusedToken, unpackPayload } from "./wire.js";
import { MAX_DEPTH, type MsgpackClass, type MsgpackSerializerOptions, type RegisteredClass, TYPE } from "./options.js";
import { Encoder, TooDeep, Unencodable } from "./encoder.js";
import { Revival } from "./revival.js";
import { builtInPrototypes } from "./builtins.js";
import { errorMessage } from "../../core/guards.js";
import { failuresModule } from "../lazy.js";

/** See {@link MsgpackSerializer}'s static of this name. */
const READS_IN_PLACE: unique symbol = Symbol.for("langgraph-checkpoint-indexeddb:v1:in-place") as never;

/**
 * LangGraph's `SerializerProtocol` on msgpackr (type tag `"msgpack"`): keeps
 * LangChain messages, `Send`, `Command`, `Map`, `Set`, `Date`, typed arrays,
 * `bigint`, `undefined` and registered classes exactly, and refuses what it
 * could not read back. See the module comment for how.
 */
export class MsgpackSerializer implements SerializerProtocol {
  /**
   * Marks this class (not its subclasses) as one whose `"msgpack"` reads only
   * read their bytes and copy every binary value out (`copyBuffers`), so
   * answers from memory decode the kept bytes themselves (saver/fresh-rows.ts,
   * which finds it by this global name rather than importing the class).
   * @internal
   */
  static readonly [READS_IN_PLACE] = true;
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
      throw await explainEncodeError(error, value);
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
      if (error instanceof RefusedToken) {
        // Its words load with the rare failures; when they cannot (an offline app missing the chunk), the
        // refusal stands, in fewer words.
        const words = await failuresModule().then(
          (failures) => failures.refusalMessage(data, error.at),
          () => `MsgpackSerializer refused this payload (byte ${error.at}).`,
        );
        throw new SerializationError(words);
      }
      if (error instanceof SerializationError) throw error;
      throw new SerializationError(`Corrupt MsgpackSerializer payload (${data.length} bytes): ${errorMessage(error)}`, {
        cause: error,
      });
    }
    try {
      return await revival.finish(root);
    } catch (error) {
      if (error instanceof SerializationError) throw error;
      throw new SerializationError(`Could not revive a MsgpackSerializer payload: ${errorMessage(error)}`, {
        cause: error,
      });
    }
  }

  #register(Class: MsgpackClass): void {
    if (typeof Class !== "function" || typeof Class.prototype !== "object" || Class.prototype === null) {
      throw new TypeError(`MsgpackSerializer types must be classes, got ${String(Class)}.`);
    }
    const prototype = Class.prototype as object;
    if (builtInPrototypes().has(prototype)) {
      throw new TypeError(`${Class.name} is built in and MsgpackSerializer already stores it; remove it from types.`);
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

/** The error for a failed encode, naming where the value failed (the explanation loads only now). */
async function explainEncodeError(error: unknown, value: unknown): Promise<SerializationError> {
  let explained: string | undefined;
  try {
    explained = (await failuresModule()).encodeErrorMessage(error, value, {
      Unencodable,
      TooDeep,
      maxDepth: MAX_DEPTH,
    });
  } catch {
    // The explanation could not load (an offline app missing the chunk): the failure stands, unexplained.
    return new SerializationError("MsgpackSerializer cannot store this value (why could not be told).", {
      cause: error,
    });
  }
  if (explained) return new SerializationError(explained);
  if (error instanceof SerializationError) return error;
  return new SerializationError(`MsgpackSerializer could not serialize the value: ${errorMessage(error)}`, {
    cause: error,
  });
}
