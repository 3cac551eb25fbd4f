/** Reading: extension records revived into LangChain, LangGraph and app classes. */
import { load } from "@langchain/core/load";
import { DeltaSnapshot } from "@langchain/langgraph-checkpoint";
import { SerializationError } from "../../core/errors.js";
import { EXT, fromUtf16Bytes, type ExtensionReader, type PayloadCode } from "./wire.js";
import { LOAD_OPTIONS, type RegisteredClass } from "./options.js";
import { isRevivableLcRecord } from "./encoder.js";
import { placeholderRestorer, reviveBinary, reviveError } from "./builtins.js";
import { defineFields, expectArray, malformed, setOwn } from "./diagnostics.js";
import { errorMessage, isPlainObject } from "../../core/guards.js";

// ---------------------------------------------------------------------------
// Reading

/** Stands in the decoded tree for a value that is revived after unpacking. */
export class Pending {
  value: unknown;

  /** Met while stringifying a LangChain record for load(). */
  toJSON(): unknown {
    throw new SerializationError("A registered class inside a LangChain object's kwargs cannot be revived.");
  }
}

/** A LangChain record waiting for load(). */
export class LangChainPending extends Pending {
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
export class ClassPending extends Pending {
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
export class Revival implements ExtensionReader {
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
      case EXT.UTF16: {
        const text = fromUtf16Bytes(payload);
        if (text === undefined) throw malformed("string");
        return text;
      }
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
