/**
 * MsgpackSerializer: exact round trips (deep equality and class identity) for
 * every type it promises, JsonPlus compatibility, the LangChain allowlist,
 * prototype-pollution safety, registered app classes, clear errors, and no
 * eval/new Function. Runs in Node and in Chromium.
 */
import {
  AIMessage,
  AIMessageChunk,
  HumanMessage,
  RemoveMessage,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";
import { Serializable } from "@langchain/core/load/serializable";
import { DeltaSnapshot, JsonPlusSerializer, isDeltaSnapshot } from "@langchain/langgraph-checkpoint";
import { Command, Overwrite, Send, isCommand } from "@langchain/langgraph/web";
import { Packr, Unpackr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { countCalls } from "../../../test/support/call-counts.js";
import { firstUse, firstUseInFreshFrame } from "../../../test/support/msgpack-first-use.js";
import { byDepth } from "../../../test/support/depth.js";
import { SerializationError } from "../../core/errors.js";
import { MsgpackSerializer } from "./index.js";
import { EXT, FORMAT_MAGIC, FORMAT_VERSION, packPayload, tagged } from "./wire.js";

const serde = new MsgpackSerializer();

async function roundTrip<T>(value: T, serializer: MsgpackSerializer = serde): Promise<T> {
  const [type, bytes] = await serializer.dumpsTyped(value);
  expect(type).toBe("msgpack");
  return (await serializer.loadsTyped(type, bytes)) as T;
}

/** Rejects with a SerializationError whose message matches `pattern`. */
async function expectSerializationError(promise: Promise<unknown>, pattern: RegExp): Promise<SerializationError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SerializationError);
  expect((error as Error).message).toMatch(pattern);
  return error as SerializationError;
}

/** LangGraph's structural Send check (`_isSendInterface`, internal to @langchain/langgraph). */
const isSendInterface = (value: unknown): boolean =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as { node?: unknown }).node === "string" &&
  (value as { args?: unknown }).args !== undefined;

describe("payload format", () => {
  // In Node, the first test of a fresh process (node-isolated): nothing has packed or unpacked yet. The
  // browser's files share their page, so there it runs in a frame of its own, with msgpackr imported anew.
  it("registers its msgpackr extensions on first use, not at import or construction", async () => {
    const seen = typeof window === "undefined" ? await firstUse() : await firstUseInFreshFrame();
    expect(seen.before).toMatch(/Unknown extension/);
    expect(seen.after).toBeUndefined();
  });

  it("starts every payload with the 0xC1 marker and the format version, in its own buffer", async () => {
    const [, bytes] = await serde.dumpsTyped({ hello: "world" });
    expect([bytes[0], bytes[1]]).toEqual([FORMAT_MAGIC, FORMAT_VERSION]);
    expect([FORMAT_MAGIC, FORMAT_VERSION]).toEqual([0xc1, 1]);
    expect(Object.getPrototypeOf(bytes)).toBe(Uint8Array.prototype);
    expect(bytes.byteOffset).toBe(0);
    expect(bytes.buffer.byteLength).toBe(bytes.byteLength);
  });

  it("writes undefined as its own extension, never Python's ext 0 or nil", async () => {
    const [, bytes] = await serde.dumpsTyped(undefined);
    expect([...bytes]).toEqual([0xc1, 0x01, 0xd4, EXT.UNDEFINED, 0x00]);
  });

  it("refuses payloads from an unknown format version or without the marker", async () => {
    const [, bytes] = await serde.dumpsTyped([1, 2, 3]);
    const newer = bytes.slice();
    newer[1] = 2;
    await expectSerializationError(serde.loadsTyped("msgpack", newer), /format version 2/);
    // Plain MessagePack, as Python's serializer would write it.
    await expectSerializationError(serde.loadsTyped("msgpack", new Uint8Array([0x93, 1, 2, 3])), /0xC1/);
    await expectSerializationError(serde.loadsTyped("msgpack", new Uint8Array([])), /0xC1/);
  });
});

describe("round trips: primitives and built-ins", () => {
  it("keeps undefined distinct from null, with keys present", async () => {
    const value = { a: undefined, b: null, list: [undefined, null, 1], nested: { deep: undefined } };
    const back = await roundTrip(value);
    expect(back).toStrictEqual(value);
    expect(Object.keys(back)).toEqual(["a", "b", "list", "nested"]);
    expect("a" in back && back.a === undefined).toBe(true);
    expect("deep" in back.nested).toBe(true);
    expect(back.list).toHaveLength(3);
    expect(await roundTrip(undefined)).toBeUndefined();
    expect(await roundTrip(null)).toBeNull();
  });

  it("keeps NaN, ±Infinity, -0 and every kind of number", async () => {
    const numbers = [
      NaN,
      Infinity,
      -Infinity,
      -0,
      0,
      1,
      -1,
      0.1,
      -1.5e300,
      2 ** 31,
      2 ** 32 + 1,
      Number.MAX_SAFE_INTEGER,
      Number.MIN_VALUE,
      127,
      64,
      -33,
    ];
    const back = await roundTrip(numbers);
    expect(back).toHaveLength(numbers.length);
    back.forEach((n, i) => expect(Object.is(n, numbers[i])).toBe(true));
    expect(Object.is(await roundTrip(-0), -0)).toBe(true);
    expect(typeof back[1]).toBe("number");
  });

  it("keeps bigint, including beyond 64 bits", async () => {
    const values = [0n, -5n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n - 1n, 2n ** 200n + 7n, -(2n ** 200n)];
    expect(await roundTrip(values)).toEqual(values);
    expect(typeof (await roundTrip(1n))).toBe("bigint");
  });

  it("keeps strings, unicode keys and nested arrays/objects", async () => {
    const value = {
      "": "",
      ключ: "значение",
      "🔑 emoji": ["🎉", "a".repeat(70) + "é", "日本語".repeat(40)],
      nested: [[[[]]], [{}], { deep: { deeper: [1, [2, [3, { x: "y" }]]] } }],
      "1": "numeric-looking key",
      "with.dot": true,
      bools: [true, false],
    };
    expect(await roundTrip(value)).toStrictEqual(value);
  });

  it("keeps strings with a lone surrogate (a text cut inside an emoji), as values, keys, Map keys and in messages", async () => {
    // UTF-8 has no lone surrogate: msgpackr wrote U+FFFD for each, and the text came back changed.
    const cut = "ok \ud83d";
    const value = {
      cut,
      long: "x".repeat(60) + "\ud83d",
      low: "\ude00 first",
      pair: "🎉 whole",
      [cut]: "a key",
      map: new Map([[cut, cut]]),
      re: new RegExp("\ud83d"),
      message: new AIMessage({ content: cut }),
    };
    const back = await roundTrip(value);
    expect(back).toStrictEqual(value);
    expect(back.message).toBeInstanceOf(AIMessage);
    expect(back.message.content).toBe(cut);
  });

  it("reads the lone-surrogate string extension's bytes as frozen (golden)", async () => {
    // 0xC1 0x01, fixext1(59, 0), bin8 of 4 bytes: "a" and a lone high surrogate, UTF-16LE.
    const bytes = new Uint8Array([0xc1, 0x01, 0xd4, 59, 0x00, 0xc4, 0x04, 0x61, 0x00, 0x3d, 0xd8]);
    expect(await serde.loadsTyped("msgpack", bytes)).toBe("a\ud83d");
    expect([...(await serde.dumpsTyped("a\ud83d"))[1]]).toEqual([...bytes]);
    // Well-formed strings stay MessagePack strings, as before the extension.
    expect([...(await serde.dumpsTyped("a🎉"))[1]].slice(2, 3)).toEqual([0xa5]);
    await expectSerializationError(
      serde.loadsTyped("msgpack", new Uint8Array([0xc1, 0x01, 0xd4, 59, 0x00, 0xc4, 0x01, 0x61])),
      /string/,
    );
  });

  it("keeps every mix of lone surrogates, pairs, U+FEFF and U+FFFD", async () => {
    const units = [0x61, 0xd83d, 0xde00, 0xdbff, 0xdc00, 0xfeff, 0xfffd, 0x00];
    let seed = 7;
    for (let n = 0; n < 300; n++) {
      const codes = Array.from({ length: n % 23 }, () => units[(seed = (seed * 48271) % 0x7fffffff) % units.length]!);
      const text = String.fromCharCode(...codes, 0xd800);
      expect(await roundTrip([text, text.slice(0, -1), text.slice(1)])).toStrictEqual([
        text,
        text.slice(0, -1),
        text.slice(1),
      ]);
    }
  });

  it("reads a long string with a lone surrogate in one native decode, not one concatenation per code unit", async () => {
    // A long text cut inside an emoji. Read one unit at a time it took ten times as long as
    // writing, and ~17 bytes of heap per unit in V8. Counted, not timed (a bound on time
    // failed on a loaded machine): one UTF-16 decode, and a string built from a code unit
    // only for each lone surrogate, not for each unit. The counts do not depend on the
    // length: 400 K code units at the fast depth (a bin32 payload, as at 4 M), 4 M at the full.
    const long = "a".repeat(byDepth(400_000, 4_000_000)) + "\ud83d";
    const [type, bytes] = await serde.dumpsTyped(long);
    const utf16 = (self: unknown) => !(self instanceof TextDecoder) || self.encoding === "utf-16le";
    const read = await countCalls(
      [
        [TextDecoder.prototype, "decode"],
        [String, "fromCharCode"],
      ],
      () => serde.loadsTyped(type, bytes),
      utf16,
    );
    expect(read.result).toBe(long);
    expect(read.calls[0], "UTF-16 decodes").toBe(1);
    expect(read.calls[1], "strings built from code units").toBeLessThan(100);
  });

  it("keeps objects of every map size (fixmap, map16, map32)", async () => {
    for (const size of [0, 15, 16, 70_000]) {
      const object = Object.fromEntries(Array.from({ length: size }, (_, i) => [`k${i}`, i]));
      expect(await roundTrip(object)).toEqual(object);
    }
  });

  it("keeps Date to the millisecond, including invalid and pre-1970 dates", async () => {
    const dates = [
      new Date(),
      new Date(0),
      new Date(1_000),
      new Date(-1_500),
      new Date("1815-12-10T12:34:56.789Z"),
      new Date("2999-01-01T00:00:00.001Z"),
      new Date(8.64e15),
    ];
    const back = await roundTrip(dates);
    back.forEach((date, i) => {
      expect(date).toBeInstanceOf(Date);
      expect(date.getTime()).toBe(dates[i]!.getTime());
    });
    const invalid = await roundTrip(new Date(NaN));
    expect(invalid).toBeInstanceOf(Date);
    expect(Number.isNaN(invalid.getTime())).toBe(true);
  });

  it("keeps Uint8Array as MessagePack bin, nested and top-level", async () => {
    const bytes = new Uint8Array([0, 1, 2, 253, 254, 255]);
    const top = await roundTrip(bytes);
    expect(Object.getPrototypeOf(top)).toBe(Uint8Array.prototype);
    expect([...top]).toEqual([...bytes]);
    const nested = await roundTrip({ a: { b: [bytes, new Uint8Array(0)] } });
    expect(nested.a.b[0]).toBeInstanceOf(Uint8Array);
    expect([...nested.a.b[0]!]).toEqual([...bytes]);
    expect(nested.a.b[1]).toHaveLength(0);
    // A view stores only its own bytes, and reads back as an independent array.
    const view = new Uint8Array(new Uint8Array([9, 8, 7, 6, 5]).buffer, 1, 3);
    const back = await roundTrip(view);
    expect([...back]).toEqual([8, 7, 6]);
    expect(back.buffer.byteLength).toBe(3);
    const [, packed] = await serde.dumpsTyped(bytes);
    expect(packed[2]).toBe(0xc4); // bin 8
  });

  // Decided by the platform, not by looking for Buffer: in Node the test
  // must run (a missing Buffer fails it); in a browser, which has no
  // Buffer, the test says so and fails if one appears.
  if (typeof window !== "undefined") {
    it("in a browser there is no Node Buffer to read (the Buffer case runs in the node project)", () => {
      expect(typeof Buffer).toBe("undefined");
    });
  } else
    it("reads a Node Buffer back as a plain Uint8Array", async () => {
      const back = await roundTrip({ buffer: Buffer.from("hi") });
      expect(Object.getPrototypeOf(back.buffer)).toBe(Uint8Array.prototype);
      expect(new TextDecoder().decode(back.buffer)).toBe("hi");
      // Buffer input to loadsTyped works too.
      const [type, bytes] = await serde.dumpsTyped([1]);
      expect(await serde.loadsTyped(type, Buffer.from(bytes))).toEqual([1]);
    });

  it("keeps other typed arrays, ArrayBuffer and DataView with their types", async () => {
    const value = {
      f32: new Float32Array([1.5, -2.25, NaN]),
      i16: new Int16Array(new Int16Array([1, -2, 3, -4]).buffer, 2, 2),
      big: new BigInt64Array([-(2n ** 63n), 5n]),
      clamped: new Uint8ClampedArray([0, 255]),
      buffer: new Uint8Array([1, 2, 3]).buffer,
      view: new DataView(new Uint8Array([4, 5]).buffer),
    };
    const back = await roundTrip(value);
    expect(back.f32).toBeInstanceOf(Float32Array);
    expect([...back.f32]).toEqual([1.5, -2.25, NaN]);
    expect(back.i16).toBeInstanceOf(Int16Array);
    expect([...back.i16]).toEqual([-2, 3]);
    expect(back.big).toBeInstanceOf(BigInt64Array);
    expect([...back.big]).toEqual([-(2n ** 63n), 5n]);
    expect(back.clamped).toBeInstanceOf(Uint8ClampedArray);
    expect(back.buffer).toBeInstanceOf(ArrayBuffer);
    expect([...new Uint8Array(back.buffer)]).toEqual([1, 2, 3]);
    expect(back.view).toBeInstanceOf(DataView);
    expect(back.view.getUint8(1)).toBe(5);
  });

  it("keeps Map (any keys, insertion order) and Set", async () => {
    const objectKey = { id: 1 };
    const map = new Map<unknown, unknown>([
      ["b", 1],
      ["a", undefined],
      [1, "number key"],
      [objectKey, new Map([["inner", new Set([1, "x"])]])],
      [null, -0],
    ]);
    const back = await roundTrip({ map, set: new Set([3, "three", { x: 3 }, new Date(3)]) });
    expect(back.map).toBeInstanceOf(Map);
    expect(back.map).toEqual(map);
    expect([...back.map.keys()]).toEqual(["b", "a", 1, objectKey, null]);
    expect(back.map.has("a")).toBe(true);
    expect(Object.is(back.map.get(null), -0)).toBe(true);
    expect(back.set).toBeInstanceOf(Set);
    expect(back.set).toEqual(new Set([3, "three", { x: 3 }, new Date(3)]));
    expect(await roundTrip(new Map())).toEqual(new Map());
  });

  it("keeps RegExp source and flags", async () => {
    const back = await roundTrip([/a+b?\/c/giu, new RegExp("^x$", "ms")]);
    expect(back[0]).toBeInstanceOf(RegExp);
    expect(back[0]!.source).toBe("a+b?\\/c");
    expect(back[0]!.flags).toBe("giu");
    expect(back[1]!.flags).toBe("ms");
  });

  it("keeps Error name, message, stack, cause and own fields", async () => {
    const cause = new TypeError("inner");
    const error = Object.assign(new Error("outer", { cause }), { code: "E_FAIL", details: { retry: true } });
    const back = await roundTrip(error);
    expect(back).toBeInstanceOf(Error);
    expect(back.message).toBe("outer");
    expect(back.name).toBe("Error");
    expect(back.stack).toBe(error.stack);
    expect(back.cause).toBeInstanceOf(TypeError);
    expect((back.cause as Error).message).toBe("inner");
    expect(back.code).toBe("E_FAIL");
    expect(back.details).toEqual({ retry: true });
    expect(Object.keys(back)).toEqual(["code", "details"]);
    expect(back).toEqual(error);

    const range = await roundTrip(new RangeError("out"));
    expect(range).toBeInstanceOf(RangeError);
    const aggregate = await roundTrip(new AggregateError([new Error("a"), "b"], "many"));
    expect(aggregate).toBeInstanceOf(AggregateError);
    expect(aggregate.errors).toEqual([new Error("a"), "b"]);

    // An unregistered subclass keeps its name and fields, as an Error.
    class QuotaError extends Error {
      override name = "QuotaError";
      bytes = 10;
    }
    const custom = await roundTrip(new QuotaError("full"));
    expect(custom).toBeInstanceOf(Error);
    expect(custom.name).toBe("QuotaError");
    expect(custom.bytes).toBe(10);
    expect(custom.message).toBe("full");
  });

  it("does not modify the value it serializes (frozen input)", async () => {
    const deepFreeze = <T>(value: T): T => {
      if (typeof value === "object" && value !== null) {
        Object.values(value).forEach(deepFreeze);
        Object.freeze(value);
      }
      return value;
    };
    const value = deepFreeze({ a: undefined, b: [-0, undefined, { c: new Map([[1, undefined]]) }] });
    expect(await roundTrip(value)).toStrictEqual({
      a: undefined,
      b: [-0, undefined, { c: new Map([[1, undefined]]) }],
    });
  });
});

describe("prototype pollution", () => {
  it("keeps an own __proto__ key as data without touching any prototype", async () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "__proto_": "neighbour", "ok": 1}') as Record<
      string,
      unknown
    >;
    const back = await roundTrip({ top: value, inMap: new Map([["k", value]]), list: [value] });
    for (const object of [back.top, back.inMap.get("k") as Record<string, unknown>, back.list[0]!]) {
      expect(Object.getPrototypeOf(object)).toBe(Object.prototype);
      expect(Object.hasOwn(object, "__proto__")).toBe(true);
      expect(Object.getOwnPropertyDescriptor(object, "__proto__")?.value).toEqual({ polluted: true });
      expect(object.__proto_).toBe("neighbour");
      expect(object.polluted).toBeUndefined();
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("polluted");
  });

  it("ignores __proto__ and constructor keys in crafted bytes", async () => {
    const crafted = new Packr({ useRecords: false }).pack(
      JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}'),
    );
    const bytes = new Uint8Array([FORMAT_MAGIC, FORMAT_VERSION, ...crafted]);
    const back = (await serde.loadsTyped("msgpack", bytes)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("LangChain objects", () => {
  const messages = () => [
    new SystemMessage("You are terse."),
    new HumanMessage({ content: "hi", id: "h1", name: "ada" }),
    new HumanMessage({
      content: [
        { type: "text", text: "multi" },
        { type: "image_url", image_url: { url: "data:," } },
      ],
    }),
    new AIMessage({
      content: "calling",
      id: "a1",
      tool_calls: [
        { name: "search", args: { q: "x", n: 2, nested: { deep: [1, 2] } }, id: "call_1", type: "tool_call" },
      ],
      usage_metadata: { input_tokens: 3, output_tokens: 4, total_tokens: 7 },
      response_metadata: { model: "m" },
    }),
    new ToolMessage({
      content: "result",
      tool_call_id: "call_1",
      name: "search",
      status: "error",
      artifact: { rows: [1, 2] },
    }),
    new AIMessageChunk({
      content: "partial",
      tool_call_chunks: [{ name: "f", args: '{"a":1}', id: "c2", index: 0, type: "tool_call_chunk" }],
    }),
    new RemoveMessage({ id: "h1" }),
  ];

  it("revives messages as instances of their classes, deeply equal", async () => {
    const original = messages();
    const back = await roundTrip({ messages: original });
    expect(back.messages).toEqual(original);
    const classes = [SystemMessage, HumanMessage, HumanMessage, AIMessage, ToolMessage, AIMessageChunk, RemoveMessage];
    back.messages.forEach((message, i) => {
      expect(message).toBeInstanceOf(classes[i]!);
      expect(message.constructor).toBe(classes[i]);
    });
    const ai = back.messages[3] as AIMessage;
    expect(ai.tool_calls).toEqual([
      { name: "search", args: { q: "x", n: 2, nested: { deep: [1, 2] } }, id: "call_1", type: "tool_call" },
    ]);
    expect(ai.usage_metadata).toEqual({ input_tokens: 3, output_tokens: 4, total_tokens: 7 });
    expect((back.messages[4] as ToolMessage).tool_call_id).toBe("call_1");
    expect((back.messages[4] as ToolMessage).status).toBe("error");
    expect((back.messages[5] as AIMessageChunk).tool_call_chunks).toEqual(
      (original[5] as AIMessageChunk).tool_call_chunks,
    );
  });

  it("puts revived messages back inside Map keys and values, Sets, Errors and snapshots, in order", async () => {
    const [a, b, c] = [new HumanMessage("a"), new AIMessage("b"), new HumanMessage("c")];
    const value = {
      map: new Map<unknown, unknown>([
        ["first", 1],
        [a, b],
        ["last", [c]],
      ]),
      set: new Set<unknown>(["x", b, "y"]),
      error: new Error("failed", { cause: { message: c } }),
      snapshot: new DeltaSnapshot(new Map([["m", a]])),
    };
    const back = await roundTrip(value);
    expect([...back.map.keys()][1]).toBeInstanceOf(HumanMessage);
    expect([...back.map.values()][1]).toBeInstanceOf(AIMessage);
    expect(back.map).toEqual(value.map);
    expect([...back.set]).toEqual(["x", b, "y"]);
    expect([...back.set][1]).toBeInstanceOf(AIMessage);
    expect((back.error.cause as { message: unknown }).message).toBeInstanceOf(HumanMessage);
    expect(back.snapshot.value.get("m")).toBeInstanceOf(HumanMessage);
    expect(back).toEqual(value);
  });

  it("stores the lc:1 constructor records JsonPlus writes", async () => {
    const message = new HumanMessage({ content: "hi", id: "h1" });
    const [, bytes] = await serde.dumpsTyped(message);
    // fixext1(LC) then the record, the same map JsonPlus stores as JSON.
    expect([bytes[2], bytes[3], bytes[4]]).toEqual([0xd4, EXT.LC, 0x00]);
    const record = new Unpackr({ useRecords: false }).unpack(bytes.subarray(5));
    expect(record).toEqual(message.toJSON());
    expect(record).toMatchObject({ lc: 1, type: "constructor", id: ["langchain_core", "messages", "HumanMessage"] });
  });

  it("revives a message nested in another message's kwargs", async () => {
    const inner = new HumanMessage("inner");
    const outer = new AIMessage({ content: "outer", additional_kwargs: { quoted: inner } });
    const back = await roundTrip([outer, inner]);
    expect(back[0]).toBeInstanceOf(AIMessage);
    expect(back[0]!.additional_kwargs.quoted).toBeInstanceOf(HumanMessage);
    expect(back[1]).toBeInstanceOf(HumanMessage);
    expect(back).toEqual([outer, inner]);
  });

  it("keeps undefined, NaN, -0 and bigint inside message kwargs, which JSON cannot carry", async () => {
    const message = new AIMessage({
      content: "",
      tool_calls: [
        { name: "f", args: { missing: undefined, nan: NaN, negative: -0, big: 2n ** 70n }, id: "c", type: "tool_call" },
      ],
    });
    const [, bytes] = await serde.dumpsTyped(message);
    expect([bytes[2], bytes[3]]).toEqual([0xd4, EXT.LC_EXACT]); // the exact (placeholder) path
    const back = await roundTrip(message);
    const args = back.tool_calls![0]!.args;
    expect("missing" in args && args.missing === undefined).toBe(true);
    expect(Number.isNaN(args.nan)).toBe(true);
    expect(Object.is(args.negative, -0)).toBe(true);
    expect(args.big).toBe(2n ** 70n);
  });

  it("returns user objects with lc keys as plain data, never instantiated", async () => {
    const lookalike = {
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { content: "x" },
    };
    const secret = { lc: 1, type: "secret", id: ["OPENAI_API_KEY"] };
    const escaped = { __lc_escaped__: { lc: 1 } };
    const back = await roundTrip({ lookalike, secret, escaped });
    expect(back).toStrictEqual({ lookalike, secret, escaped });
    expect(Object.getPrototypeOf(back.lookalike)).toBe(Object.prototype);
    // Inside a message, @langchain/core escapes them (__lc_escaped__) and load() unescapes.
    const message = new HumanMessage({ content: "x", additional_kwargs: { lookalike, secret, escaped } });
    const revived = await roundTrip(message);
    expect(revived).toBeInstanceOf(HumanMessage);
    expect(revived.additional_kwargs).toStrictEqual({ lookalike, secret, escaped });
  });

  it("refuses lc records outside langchain_core/langchain without instantiating anything", async () => {
    const record = (id: string[], kwargs: Record<string, unknown> = {}) => ({ lc: 1, type: "constructor", id, kwargs });
    const forged = [
      tagged(EXT.LC, record(["evil_module", "Exploit"])),
      tagged(EXT.LC, record(["langchain_core"])),
      tagged(EXT.LC, { lc: 1, type: "secret", id: ["OPENAI_API_KEY"] }),
    ];
    for (const value of forged) {
      await expectSerializationError(serde.loadsTyped("msgpack", packPayload(value)), /Refusing to revive/);
    }
    // An allowed record whose kwargs smuggle a foreign record: load() itself refuses.
    const smuggled = tagged(
      EXT.LC,
      record(["langchain_core", "messages", "HumanMessage"], { content: record(["evil_module", "X"]) }),
    );
    await expectSerializationError(serde.loadsTyped("msgpack", packPayload(smuggled)), /revive a LangChain object/);
    // A secret reference inside kwargs is never read from the environment.
    const secret = tagged(
      EXT.LC,
      record(["langchain_core", "messages", "HumanMessage"], { content: { lc: 1, type: "secret", id: ["toString"] } }),
    );
    await expectSerializationError(serde.loadsTyped("msgpack", packPayload(secret)), /Missing secret/);
  });

  it("refuses Serializable objects load() could not revive, at write time", async () => {
    class NotSerializable extends Serializable {
      lc_namespace = ["langchain_core", "test"];
    }
    await expectSerializationError(
      serde.dumpsTyped({ x: new NotSerializable({}) }),
      /NotSerializable.*not_implemented.*at \$\.x/,
    );
    class ForeignNamespace extends Serializable {
      override lc_serializable = true;
      lc_namespace = ["my_app", "things"];
    }
    await expectSerializationError(
      serde.dumpsTyped([new ForeignNamespace({ a: 1 })]),
      /my_app\/things\/ForeignNamespace.*types/,
    );
    // Registered, the same class round-trips as itself.
    const withType = new MsgpackSerializer({ types: [ForeignNamespace] });
    const back = await roundTrip(new ForeignNamespace({ a: 1 }), withType);
    expect(back).toBeInstanceOf(ForeignNamespace);
    expect(back.lc_kwargs).toEqual({ a: 1 });
  });
});

describe("LangGraph values", () => {
  it("stores Send in JsonPlus's plain shape, which LangGraph recognises", async () => {
    const send = new Send("worker", { topic: "cats", n: undefined });
    const back = await roundTrip({ __pregel_tasks: [send] });
    const jsonPlus = new JsonPlusSerializer();
    const [jsonType, json] = await jsonPlus.dumpsTyped({ __pregel_tasks: [send] });
    expect(back).toStrictEqual(await jsonPlus.loadsTyped(jsonType, json));
    expect(back.__pregel_tasks[0]).toStrictEqual({ node: "worker", args: { topic: "cats", n: undefined } });
    expect(isSendInterface(back.__pregel_tasks[0])).toBe(true);
  });

  it("stores Command in JsonPlus's plain shape, nested Sends and messages included", async () => {
    const command = new Command({
      update: { messages: [new HumanMessage("from command")] },
      goto: [new Send("worker", { i: 1 }), "other"],
      resume: { answer: 42 },
    });
    const back = (await roundTrip(command as unknown)) as Record<string, unknown>;
    expect(back.lg_name).toBe("Command");
    expect(back.goto).toStrictEqual([{ node: "worker", args: { i: 1 } }, "other"]);
    expect(back.resume).toEqual({ answer: 42 });
    expect((back.update as { messages: unknown[] }).messages[0]).toBeInstanceOf(HumanMessage);
    // A value LangGraph rebuilds into an equal Command (_deserializeCommandSendObjectGraph).
    const rebuilt = new Command(back as ConstructorParameters<typeof Command>[0]);
    expect(rebuilt.goto).toEqual(command.goto);
    expect(rebuilt.update).toEqual(command.update);
  });

  it("returns real Send, Command and Overwrite instances when their classes are registered", async () => {
    const withLangGraph = new MsgpackSerializer({ types: [Send, Command, Overwrite] });
    const command = new Command({ goto: new Send("worker", { i: 1 }), update: { x: 1 }, graph: Command.PARENT });
    const back = await roundTrip(
      { send: new Send("a", { b: 1 }), command, overwrite: new Overwrite([1, 2]) },
      withLangGraph,
    );
    expect(back.send).toBeInstanceOf(Send);
    expect(back.send).toEqual(new Send("a", { b: 1 }));
    expect(isCommand(back.command)).toBe(true);
    expect(back.command).toBeInstanceOf(Command);
    expect((back.command.goto as unknown[])[0]).toBeInstanceOf(Send);
    expect(back.command.graph).toBe(Command.PARENT);
    expect(back.command._updateAsTuples()).toEqual([["x", 1]]);
    expect(back.overwrite).toBeInstanceOf(Overwrite);
    expect(back.overwrite.value).toEqual([1, 2]);
  });

  it("stores Overwrite as a plain {__overwrite__} object and interrupts as plain objects", async () => {
    const back = await roundTrip({
      messages: new Overwrite([new AIMessage("reset")]),
      __interrupt__: [{ id: "int-1", value: { question: "approve?", when: new Date(5) } }],
    });
    expect(Object.keys(back.messages)).toEqual(["__overwrite__"]);
    expect(Object.getPrototypeOf(back.messages)).toBe(Object.prototype);
    expect((back.messages as unknown as { __overwrite__: unknown[] }).__overwrite__[0]).toBeInstanceOf(AIMessage);
    expect(back.__interrupt__).toStrictEqual([{ id: "int-1", value: { question: "approve?", when: new Date(5) } }]);
  });

  it("keeps DeltaSnapshot, with messages inside revived", async () => {
    const snapshot = new DeltaSnapshot([new HumanMessage("a"), new AIMessage("b")]);
    const back = await roundTrip({ channel_values: { messages: snapshot, count: new DeltaSnapshot(3) } });
    expect(back.channel_values.messages).toBeInstanceOf(DeltaSnapshot);
    expect(isDeltaSnapshot(back.channel_values.messages)).toBe(true);
    expect(back.channel_values.messages.value[0]).toBeInstanceOf(HumanMessage);
    expect(back.channel_values.messages).toEqual(snapshot);
    expect(back.channel_values.count).toEqual(new DeltaSnapshot(3));
    const [, bytes] = await serde.dumpsTyped(new DeltaSnapshot(null));
    expect([...bytes]).toEqual([0xc1, 0x01, 0xd4, 7, 0x00, 0xc0]); // Python's code 7
  });
});

describe("JsonPlusSerializer rows", () => {
  const state = () => ({
    messages: [
      new HumanMessage("hi"),
      new AIMessage({ content: "yo", tool_calls: [{ name: "f", args: {}, id: "1" }] }),
    ],
    map: new Map([["k", 1]]),
    set: new Set([1, 2]),
    missing: undefined,
    snapshot: new DeltaSnapshot(["x"]),
    bytes: new Uint8Array([1, 2]),
    nested: { when: "2024-01-01T00:00:00.000Z", list: [1, null] },
  });

  it("reads 'json' rows exactly as JsonPlusSerializer does", async () => {
    const jsonPlus = new JsonPlusSerializer();
    const [type, bytes] = await jsonPlus.dumpsTyped(state());
    expect(type).toBe("json");
    const ours = (await serde.loadsTyped(type, bytes)) as ReturnType<typeof state>;
    expect(ours).toStrictEqual(await jsonPlus.loadsTyped(type, bytes));
    expect(ours.messages[1]).toBeInstanceOf(AIMessage);
    expect(ours.map).toEqual(new Map([["k", 1]]));
    expect(ours.snapshot).toBeInstanceOf(DeltaSnapshot);
    // A string, as some savers hand JSON back.
    expect(await serde.loadsTyped(type, new TextDecoder().decode(bytes))).toStrictEqual(ours);
  });

  it("reads 'bytes' rows", async () => {
    const [type, bytes] = await new JsonPlusSerializer().dumpsTyped(new Uint8Array([7, 8]));
    expect(type).toBe("bytes");
    expect([...((await serde.loadsTyped(type, bytes)) as Uint8Array)]).toEqual([7, 8]);
  });

  it("wraps a broken json row in a SerializationError", async () => {
    await expectSerializationError(serde.loadsTyped("json", new TextEncoder().encode("{nope")), /json/);
  });
});

describe("registered app classes", () => {
  class Point {
    constructor(
      public x: number,
      public y: number,
    ) {}
    length(): number {
      return Math.hypot(this.x, this.y);
    }
  }
  class Shape {
    static msgpackName = "app.Shape";
    points: Point[] = [];
    meta = new Map<string, unknown>();
  }
  class Money {
    #cents: bigint;
    constructor(cents: bigint) {
      this.#cents = cents;
    }
    get cents(): bigint {
      return this.#cents;
    }
    toMsgpack(): unknown {
      return { cents: this.#cents };
    }
    static async fromMsgpack(data: unknown): Promise<Money> {
      return new Money((data as { cents: bigint }).cents);
    }
  }
  class Conversation {
    constructor(readonly messages: HumanMessage[]) {}
    toMsgpack(): unknown {
      return this.messages;
    }
    static fromMsgpack(data: unknown): Conversation {
      // fromMsgpack sees fully revived data: messages are instances already.
      if (!(data as unknown[]).every((m) => m instanceof HumanMessage)) throw new Error("not revived");
      return new Conversation(data as HumanMessage[]);
    }
  }
  class AppError extends Error {
    override name = "AppError";
    constructor(
      message: string,
      readonly status: number,
    ) {
      super(message);
    }
  }
  const app = new MsgpackSerializer({ types: [Point, Shape, Money, Conversation, AppError] });

  it("restores own fields onto the class prototype (methods work, constructor not called)", async () => {
    const shape = new Shape();
    shape.points.push(new Point(3, 4), new Point(0, 1));
    shape.meta.set("label", new HumanMessage("nested message"));
    const back = await roundTrip({ shape }, app);
    expect(back.shape).toBeInstanceOf(Shape);
    expect(back.shape.points[0]).toBeInstanceOf(Point);
    expect(back.shape.points[0]!.length()).toBe(5);
    expect(back.shape.meta.get("label")).toBeInstanceOf(HumanMessage);
    expect(back.shape).toEqual(shape);
  });

  it("uses toMsgpack/fromMsgpack when a class defines them (private fields, async)", async () => {
    const back = await roundTrip([new Money(12_345n), new Conversation([new HumanMessage("hi")])], app);
    expect(back[0]).toBeInstanceOf(Money);
    expect((back[0] as Money).cents).toBe(12_345n);
    expect(back[1]).toBeInstanceOf(Conversation);
    expect((back[1] as Conversation).messages[0]!.content).toBe("hi");
  });

  it("keeps registered Error subclasses with message, stack and fields", async () => {
    const error = new AppError("nope", 409);
    const back = await roundTrip(error, app);
    expect(back).toBeInstanceOf(AppError);
    expect(back.message).toBe("nope");
    expect(back.status).toBe(409);
    expect(back.stack).toBe(error.stack);
    expect(back).toEqual(error);
  });

  it("keeps a __proto__ field as data on a registered instance", async () => {
    const point = new Point(1, 2) as Point & Record<string, unknown>;
    Object.defineProperty(point, "__proto__", {
      value: { polluted: true },
      enumerable: true,
      writable: true,
      configurable: true,
    });
    const back = (await roundTrip(point, app)) as Point & Record<string, unknown>;
    expect(back).toBeInstanceOf(Point);
    expect(Object.getOwnPropertyDescriptor(back, "__proto__")?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("is per serializer: registering in one does not affect another", async () => {
    await expectSerializationError(
      serde.dumpsTyped({ p: new Point(1, 1) }),
      /class Point at \$\.p\b.*types: \[Point\]/,
    );
    const [type, bytes] = await app.dumpsTyped(new Point(1, 1));
    await expectSerializationError(serde.loadsTyped(type, bytes), /registered class "Point".*types: \[Point\]/);
    expect(await new MsgpackSerializer({ types: [Point] }).loadsTyped(type, bytes)).toBeInstanceOf(Point);
  });

  it("rejects bad registrations with a message that says what to do", () => {
    expect(() => new MsgpackSerializer({ types: [Map] })).toThrow(/built in/);
    const A = class Same {};
    const B = class Same {};
    expect(() => new MsgpackSerializer({ types: [A, B] })).toThrow(/named "Same".*msgpackName/);
    class HalfHooks {
      toMsgpack(): unknown {
        return 1;
      }
    }
    expect(() => new MsgpackSerializer({ types: [HalfHooks] })).toThrow(/define both or neither/);
    expect(() => new MsgpackSerializer({ types: [Point, Point] })).not.toThrow();
  });
});

describe("errors", () => {
  it("names an unknown class and where it is, instead of storing a plain object", async () => {
    class Widget {
      size = 1;
      toJSON() {
        return { size: this.size };
      }
    }
    const error = await expectSerializationError(
      serde.dumpsTyped({ state: { items: [1, new Widget()] } }),
      /instance of class Widget at \$\.state\.items\[1\]\./,
    );
    expect(error.message).toMatch(/types: \[Widget\]/);
    expect(error.message).toMatch(/toJSON/);
    await expectSerializationError(serde.dumpsTyped(new (class Other {})()), /class Other at \$\./);
    // Subclasses of handled built-ins are classes of their own.
    class MyMap extends Map {}
    await expectSerializationError(serde.dumpsTyped([new MyMap()]), /class MyMap at \$\[0\]/);
  });

  it("refuses functions and symbols, naming them", async () => {
    function callback(): void {}
    await expectSerializationError(
      serde.dumpsTyped({ hooks: { onDone: callback } }),
      /function \("callback"\) at \$\.hooks\.onDone/,
    );
    await expectSerializationError(serde.dumpsTyped([() => 1]), /function .* at \$\[0\]/);
    await expectSerializationError(serde.dumpsTyped({ s: Symbol("x") }), /symbol \(Symbol\(x\)\) at \$\.s/);
    // A function inside a message's kwargs is caught too.
    const message = new AIMessage({ content: "x", additional_kwargs: { fn: callback } });
    await expectSerializationError(serde.dumpsTyped([message]), /function \("callback"\) at \$\[0\]\..*fn/);
  });

  it("refuses cycles with a clear message, without hanging", async () => {
    const object: Record<string, unknown> = { a: { b: {} } };
    (object.a as Record<string, Record<string, unknown>>).b!.back = object;
    await expectSerializationError(serde.dumpsTyped(object), /circular reference: \$\.a\.b\.back/);
    const array: unknown[] = [1];
    array.push([array]);
    await expectSerializationError(serde.dumpsTyped(array), /circular reference: \$\[1\]\[0\]/);
    const map = new Map<string, unknown>();
    map.set("self", map);
    await expectSerializationError(serde.dumpsTyped({ map }), /circular reference: \$\.map<Map value #0>/);
  });

  it("refuses nesting deeper than 1000 levels", async () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 1_100; i++) deep = [deep];
    await expectSerializationError(serde.dumpsTyped(deep), /nested more than 1000 levels/);
    let ok: unknown = "bottom";
    for (let i = 0; i < 900; i++) ok = { next: ok };
    expect(await roundTrip(ok)).toEqual(ok);
  });

  it("turns corrupt and truncated bytes into SerializationError", async () => {
    const [, bytes] = await serde.dumpsTyped({
      messages: [new HumanMessage("hi")],
      list: [1, 2, 3],
      map: new Map([[1, 2]]),
    });
    const cases: Uint8Array[] = [
      bytes.slice(0, bytes.length - 1),
      bytes.slice(0, 3),
      bytes.slice(0, 2),
      new Uint8Array([...bytes, 0x00]),
      new Uint8Array([0xc1, 0x01, 0xc1]),
      new Uint8Array([0xc1, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff]),
      new Uint8Array([0xc1, 0x01, 0xd4, EXT.MAP, 0x00, 0x93, 1, 2, 3]),
      new Uint8Array([0xc1, 0x01, 0xd4, EXT.BINARY, 0x00, 0x92, 0xa4, 0x66, 0x6f, 0x6f, 0xc4, 0x00]),
      new Uint8Array([0xc1, 0x01, 0xd4, 99, 0x00, 0xc0]),
      new Uint8Array([0xc1, 0x01, ...new Array(20_000).fill(0x91), 0xc0]),
    ];
    for (let i = 3; i < bytes.length; i += 3) {
      const flipped = bytes.slice();
      flipped[i] = flipped[i]! ^ 0xff;
      cases.push(flipped);
    }
    let refused = 0;
    for (const data of cases) {
      try {
        await serde.loadsTyped("msgpack", data);
      } catch (error) {
        expect(error).toBeInstanceOf(SerializationError);
        refused++;
      }
    }
    // Every truncated or malformed case above is refused; a flipped byte inside
    // a string may still decode (no checksum: that is EncryptedSerializer's job).
    expect(refused).toBeGreaterThanOrEqual(10);
  });

  it("refuses unknown type tags and non-byte msgpack data", async () => {
    await expectSerializationError(
      serde.loadsTyped("pickle", new Uint8Array([1])),
      /Unknown serialization type "pickle"/,
    );
    await expectSerializationError(serde.loadsTyped("msgpack+aes-gcm", new Uint8Array([1])), /EncryptedSerializer/);
    await expectSerializationError(serde.loadsTyped("msgpack", "not bytes"), /must be bytes/);
  });
});

/** A large state mixing every type, with repeated object shapes (what records would compress). */
function largeState(): Record<string, unknown> {
  const messages = Array.from({ length: 200 }, (_, i) =>
    i % 3 === 0
      ? new HumanMessage({ content: `question ${i} — ünïcödé`, id: `h${i}` })
      : i % 3 === 1
        ? new AIMessage({
            content: `answer ${i}`,
            id: `a${i}`,
            tool_calls: [{ name: "lookup", args: { i, tags: ["x", "y"] }, id: `c${i}`, type: "tool_call" }],
          })
        : new ToolMessage({ content: `tool ${i}`, tool_call_id: `c${i - 1}`, id: `t${i}` }),
  );
  return {
    v: 4,
    id: "checkpoint",
    channel_values: {
      messages,
      snapshot: new DeltaSnapshot(messages.slice(0, 5)),
      rows: Array.from({ length: 300 }, (_, i) => ({ id: i, name: `row ${i}`, score: i / 7, ok: i % 2 === 0 })),
      index: new Map(Array.from({ length: 50 }, (_, i) => [`k${i}`, { at: new Date(i * 1000), big: BigInt(i) ** 5n }])),
      seen: new Set(Array.from({ length: 50 }, (_, i) => i)),
      blob: new Uint8Array(4096).map((_, i) => i % 256),
      missing: undefined,
      errors: [new TypeError("bad")],
    },
    channel_versions: { messages: 12, snapshot: 3 },
    versions_seen: { agent: { messages: 11 } },
  };
}

describe("no eval", () => {
  it("packs and unpacks a large varied state without eval or new Function", async () => {
    const state = largeState();
    const RealFunction = globalThis.Function;
    const realEval = globalThis.eval;
    const calls: string[] = [];
    const tripwire =
      (kind: string) =>
      (...args: unknown[]) => {
        calls.push(`${kind}(${args.map(String).join(", ").slice(0, 80)})`);
        throw new EvalError(`${kind} is blocked by this test (strict CSP)`);
      };
    const spy = (kind: string) =>
      new Proxy(RealFunction, {
        construct: (_target, args) => tripwire(`new ${kind}`)(...args),
        apply: (_target, _this, args) => tripwire(kind)(...args),
      });

    // Control: the tripwire does catch msgpackr's compiled record readers
    // (it calls new Function on the third read of a structure).
    const recordsPackr = new Packr({ useRecords: true });
    const recordBytes = recordsPackr.pack(Array.from({ length: 5 }, (_, i) => ({ alpha: i, beta: `b${i}` })));
    globalThis.Function = spy("Function") as FunctionConstructor;
    try {
      new Unpackr({ useRecords: true }).unpack(recordBytes);
    } finally {
      globalThis.Function = RealFunction;
    }
    expect(calls.length).toBeGreaterThan(0);
    calls.length = 0;

    globalThis.Function = spy("Function") as FunctionConstructor;
    globalThis.eval = tripwire("eval") as typeof eval;
    let back: Record<string, unknown>;
    try {
      const [type, bytes] = await new MsgpackSerializer().dumpsTyped(state);
      back = (await new MsgpackSerializer().loadsTyped(type, bytes)) as Record<string, unknown>;
    } finally {
      globalThis.Function = RealFunction;
      globalThis.eval = realEval;
    }
    expect(calls).toEqual([]);
    expect(back).toEqual(state);
    const values = back.channel_values as { messages: unknown[] };
    expect(values.messages[1]).toBeInstanceOf(AIMessage);
  });
});
