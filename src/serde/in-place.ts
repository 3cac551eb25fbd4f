/**
 * Which serializer's bytes the saver may keep and decode as they are: the
 * answers from memory (saver/fresh-rows.ts) and the values a put or read
 * remembers (saver/recent.ts, saver/fresh-cache.ts). Copying them is the
 * rule; this is the exception, in a module of its own so neither chunk
 * imports the serializer's class to find it.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";

/** Set on MsgpackSerializer itself (serde/msgpack/index.ts); a global name, so callers need not import the class. */
const READS_IN_PLACE = Symbol.for("langgraph-checkpoint-indexeddb:v1:in-place");

/**
 * Whether `serde` is the shipped MsgpackSerializer (its class, not a
 * subclass, with its own `dumpsTyped` and `loadsTyped`), whose `"msgpack"`
 * bytes need no copy of their own: `dumpsTyped` returns a fresh,
 * exactly-sized array that nothing else holds (serde/msgpack/wire.ts
 * `packPayload`), and `loadsTyped` only reads its input and copies every
 * `bin` value out (`copyBuffers`). Its `"json"`/`"bytes"` values
 * (JsonPlusSerializer's rows) still need copies: JsonPlusSerializer returns
 * `"bytes"` as the array it was given.
 * @internal
 */
export function keepsInPlace(serde: SerializerProtocol): boolean {
  const ctor = (Object.getPrototypeOf(serde) as { constructor?: { prototype?: SerializerProtocol } } | null)
    ?.constructor;
  return (
    Object.hasOwn(ctor ?? {}, READS_IN_PLACE) &&
    serde.loadsTyped === ctor?.prototype?.loadsTyped &&
    serde.dumpsTyped === ctor.prototype.dumpsTyped
  );
}
