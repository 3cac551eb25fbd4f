/**
 * Shared by the golden-file generator (generate.ts, run once) and the
 * format-freeze test (test/suites/golden-formats.test.ts): the tagged JSON
 * encoding of binary and non-JSON values, dumping and loading whole IndexedDB
 * databases, the comparable form of decoded values, the fixed inputs (the
 * msgpack value, the app classes, the embeddings, the raw key).
 *
 * Nothing here imports the package: the generator and the test pass in what
 * they need, so the package's files can move without touching this one.
 */
import { Embeddings } from "@langchain/core/embeddings";
import { AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { DeltaSnapshot } from "@langchain/langgraph-checkpoint";
import type { BaseCheckpointSaver, Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { BaseStore } from "@langchain/langgraph-checkpoint";
import { Command, Overwrite, Send } from "@langchain/langgraph/web";
import { expect } from "vitest";

// ---------------------------------------------------------------- base64

export function toBase64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// ---------------------------------------------------------------- tagged JSON

/**
 * JSON with tags for what JSON cannot carry; what a structured clone (an
 * IndexedDB row) or a msgpackr payload can hold:
 * `{$bin: [type, base64]}` (Uint8Array, other typed arrays, ArrayBuffer, DataView,
 * by constructor name), `{$date: ms}`, `{$undefined: 1}`, `{$bigint: "…"}`,
 * `{$num: "NaN" | "-0" | "Infinity" | "-Infinity"}`, `{$map: [[k, v]…]}`,
 * `{$set: […]}`, and `{$obj: [[key, value]…]}` for a plain object with a key starting with `$`
 * (or `__proto__`) so tags stay unambiguous.
 *
 * With `classes: true` (the comparable form of decoded values, never decoded
 * back), class instances become `{$class: [name, fields]}`, errors
 * `{$error: {name, message, stack, cause, ...own}}`, LangChain objects
 * `{$lc: [class name, toJSON()]}`.
 */
export type Tagged = null | boolean | number | string | Tagged[] | { [key: string]: Tagged };

const BINARY_TYPES: Record<string, new (buffer: ArrayBuffer) => ArrayBufferView> = {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
  DataView,
};

function binaryName(value: object): string | undefined {
  if (value instanceof ArrayBuffer) return "ArrayBuffer";
  if (ArrayBuffer.isView(value)) {
    // Node Buffers count as Uint8Array (msgpackr hands them out in Node).
    if (value instanceof Uint8Array && !(value instanceof Uint8ClampedArray)) return "Uint8Array";
    for (const name of Object.keys(BINARY_TYPES)) {
      if (value.constructor === BINARY_TYPES[name]) return name;
    }
    return value.constructor.name;
  }
  return undefined;
}

export function encodeTagged(value: unknown, options: { classes?: boolean } = {}): Tagged {
  const seen = new Set<object>();
  const walk = (v: unknown): Tagged => {
    if (v === undefined) return { $undefined: 1 };
    if (v === null || typeof v === "boolean" || typeof v === "string") return v;
    if (typeof v === "number") {
      if (Number.isNaN(v)) return { $num: "NaN" };
      if (Object.is(v, -0)) return { $num: "-0" };
      if (v === Infinity) return { $num: "Infinity" };
      if (v === -Infinity) return { $num: "-Infinity" };
      return v;
    }
    if (typeof v === "bigint") return { $bigint: v.toString() };
    if (typeof v !== "object") throw new TypeError(`cannot encode a ${typeof v}`);
    if (seen.has(v)) throw new TypeError("cycle");
    seen.add(v);
    try {
      const bin = binaryName(v);
      if (bin) {
        const bytes = v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array((v as ArrayBufferView).buffer, (v as ArrayBufferView).byteOffset, (v as ArrayBufferView).byteLength);
        return { $bin: [bin, toBase64(bytes)] };
      }
      if (v instanceof Date) return { $date: v.getTime() };
      if (v instanceof RegExp && options.classes) return { $regexp: [v.source, v.flags] };
      if (Array.isArray(v)) return Array.from(v, walk);
      if (v instanceof Map) return { $map: [...v].map(([k, x]) => [walk(k), walk(x)]) };
      if (v instanceof Set) return { $set: [...v].map(walk) };
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        if (!options.classes) throw new TypeError(`cannot encode an instance of ${proto?.constructor?.name}`);
        const record = v as Record<string, unknown> & { toJSON?: () => unknown; lc_namespace?: unknown };
        if (v instanceof Error) {
          const fields: Record<string, unknown> = { name: v.name, message: v.message, stack: v.stack };
          if ("cause" in v) fields.cause = v.cause;
          for (const key of Object.keys(v)) fields[key] = record[key];
          return { $error: [proto.constructor.name, walk(fields)] };
        }
        if (Array.isArray(record.lc_namespace) && typeof record.toJSON === "function") {
          return { $lc: [proto.constructor.name, walk(record.toJSON())] };
        }
        const fields: Record<string, unknown> = {};
        for (const key of Object.keys(v)) fields[key] = record[key];
        return { $class: [proto.constructor.name, walk(fields)] };
      }
      const keys = Object.keys(v);
      if (keys.some((key) => key.startsWith("$") || key === "__proto__")) {
        // As pairs: a `__proto__` key in JSON would set the prototype when Vite turns the JSON into a module.
        return { $obj: keys.map((key) => [key, walk((v as Record<string, unknown>)[key])]) };
      }
      const out: Record<string, Tagged> = {};
      for (const key of keys) out[key] = walk((v as Record<string, unknown>)[key]);
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return walk(value);
}

export function decodeTagged(value: Tagged): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(decodeTagged);
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0]!.startsWith("$")) {
    const tag = keys[0]!;
    const body = value[tag] as Tagged;
    switch (tag) {
      case "$undefined":
        return undefined;
      case "$bigint":
        return BigInt(body as string);
      case "$num":
        return body === "-0" ? -0 : Number(body);
      case "$date":
        return new Date(body as number);
      case "$map":
        return new Map((body as Tagged[][]).map(([k, v]) => [decodeTagged(k!), decodeTagged(v!)]));
      case "$set":
        return new Set((body as Tagged[]).map(decodeTagged));
      case "$bin": {
        const [type, data] = body as [string, string];
        const bytes = fromBase64(data);
        if (type === "Uint8Array") return bytes;
        if (type === "ArrayBuffer") return bytes.buffer;
        const Type = BINARY_TYPES[type];
        if (!Type) throw new TypeError(`unknown binary type ${type}`);
        return new Type(bytes.buffer);
      }
      case "$obj": {
        const out: Record<string, unknown> = {};
        for (const [k, v] of body as [string, Tagged][]) {
          Object.defineProperty(out, k, { value: decodeTagged(v), enumerable: true, writable: true, configurable: true });
        }
        return out;
      }
      default:
        throw new TypeError(`tag ${tag} cannot be decoded (a comparable form only)`);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = decodeTagged(v);
  return out;
}

/** The comparable form of a decoded value: tagged JSON, classes included. */
export function comparable(value: unknown): Tagged {
  return encodeTagged(value, { classes: true });
}

/**
 * A comparable form with error stacks masked: savers that revive errors
 * themselves (MemorySaver's JsonPlusSerializer) give them a new stack.
 */
export function withoutStacks(value: Tagged): Tagged {
  if (Array.isArray(value)) return value.map(withoutStacks);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, Tagged> = {};
  for (const [k, v] of Object.entries(value)) out[k] = k === "stack" ? "<stack>" : withoutStacks(v);
  return out;
}

// ---------------------------------------------------------------- database dumps

export interface IndexDump {
  name: string;
  keyPath: string | string[];
  unique: boolean;
  multiEntry: boolean;
}

export interface StoreDump {
  name: string;
  keyPath: string | string[] | null;
  autoIncrement: boolean;
  indexes: IndexDump[];
  /** Every record in key order: `[key, value]`, tagged. */
  records: [Tagged, Tagged][];
}

export interface DatabaseDump {
  version: number;
  stores: StoreDump[];
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export function openDatabase(factory: IDBFactory, name: string, version?: number, upgrade?: (db: IDBDatabase) => void): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = version === undefined ? factory.open(name) : factory.open(name, version);
    req.onupgradeneeded = () => upgrade?.(req.result);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error(`open of ${name} blocked`));
  });
}

export function deleteDatabase(factory: IDBFactory, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = factory.deleteDatabase(name);
    req.onsuccess = () => resolve();
    req.onerror = () => reject(req.error);
    req.onblocked = () => resolve();
  });
}

/** A saver golden file: the database dump and every read recorded. */
export interface SaverGolden {
  dump: DatabaseDump;
  expected: Record<string, Tagged>;
}

/** A dump without its records: what the code's upgrades must still create. */
export function schemaOf(dump: DatabaseDump): unknown {
  return { version: dump.version, stores: dump.stores.map(({ records: _records, ...schema }) => schema) };
}

/** Expects each recorded answer, key by key (a failure names the read that changed). */
export function expectAnswers(actual: Record<string, Tagged>, expected: Record<string, Tagged>): void {
  expect(Object.keys(actual)).toEqual(Object.keys(expected));
  for (const key of Object.keys(expected)) expect({ [key]: actual[key] }).toEqual({ [key]: expected[key] });
}

/** Every store of a database: schema and records, tagged. */
export async function dumpDatabase(factory: IDBFactory, name: string): Promise<DatabaseDump> {
  const db = await openDatabase(factory, name);
  try {
    const names = [...db.objectStoreNames].sort();
    const tx = db.transaction(names, "readonly");
    const stores = await Promise.all(
      names.map(async (storeName): Promise<StoreDump> => {
        const store = tx.objectStore(storeName);
        const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
        const indexes = [...store.indexNames].sort().map((indexName) => {
          const index = store.index(indexName);
          return { name: index.name, keyPath: index.keyPath, unique: index.unique, multiEntry: index.multiEntry };
        });
        return {
          name: storeName,
          keyPath: store.keyPath,
          autoIncrement: store.autoIncrement,
          indexes,
          records: keys.map((key, i) => [encodeTagged(key), encodeTagged(values[i])]),
        };
      }),
    );
    return { version: db.version, stores };
  } finally {
    db.close();
  }
}

/** Creates database `name` exactly as dumped (it must not exist). */
export async function loadDatabase(factory: IDBFactory, name: string, dump: DatabaseDump): Promise<void> {
  const db = await openDatabase(factory, name, dump.version, (created) => {
    for (const storeDump of dump.stores) {
      const store = created.createObjectStore(storeDump.name, {
        keyPath: storeDump.keyPath ?? undefined,
        autoIncrement: storeDump.autoIncrement,
      });
      for (const index of storeDump.indexes) {
        store.createIndex(index.name, index.keyPath, { unique: index.unique, multiEntry: index.multiEntry });
      }
    }
  });
  try {
    const tx = db.transaction(dump.stores.map((s) => s.name), "readwrite");
    for (const storeDump of dump.stores) {
      const store = tx.objectStore(storeDump.name);
      for (const [key, value] of storeDump.records) {
        if (storeDump.keyPath === null) store.add(decodeTagged(value), decodeTagged(key) as IDBValidKey);
        else store.add(decodeTagged(value));
      }
    }
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error("aborted"));
    });
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------- fixed inputs

/** The raw AES-256 key of the encrypted fixtures (bytes 0..31). */
export const RAW_KEY: Uint8Array<ArrayBuffer> = Uint8Array.from({ length: 32 }, (_, i) => i);

/** Embeddings with fixed vectors: a word table summed, 4 dimensions. */
export class FixedEmbeddings extends Embeddings {
  static readonly WORDS: Record<string, number[]> = {
    coffee: [1, 0, 0, 0],
    tea: [0.8, 0.2, 0, 0],
    morning: [0.1, 0, 1, 0],
    cats: [0, 1, 0, 0],
    dogs: [0, 0.9, 0.1, 0],
    pets: [0, 0.7, 0, 0.3],
    rust: [0, 0, 0, 1],
    typescript: [0, 0, 0.2, 0.9],
  };
  readonly dims = 4;
  constructor() {
    super({});
  }
  vector(text: string): number[] {
    const out = [0, 0, 0, 0.01];
    for (const word of text.toLowerCase().split(/[^a-z]+/)) {
      const v = FixedEmbeddings.WORDS[word];
      if (v) for (let i = 0; i < 4; i++) out[i]! += v[i]!;
    }
    return out;
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return texts.map((t) => this.vector(t));
  }
  async embedQuery(text: string): Promise<number[]> {
    return this.vector(text);
  }
}

/** A registered app class stored as its own fields. */
export class GoldenPoint {
  constructor(
    public x: number,
    public y: number,
  ) {}
}

/** A registered app class with its own hooks and a stable stored name. */
export class GoldenMoney {
  static msgpackName = "golden.Money";
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
  static fromMsgpack(data: unknown): GoldenMoney {
    return new GoldenMoney((data as { cents: bigint }).cents);
  }
}

/** A registered Error subclass with an own field. */
export class GoldenAppError extends Error {
  override name = "GoldenAppError";
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export const APP_TYPES = [GoldenPoint, GoldenMoney, GoldenAppError];

function fixedStack<E extends Error>(error: E, stack: string): E {
  error.stack = stack;
  return error;
}

/** The msgpack golden value: every extension type and native type, built the same way every time. */
export function msgpackValue(): Record<string, unknown> {
  const protoObject = JSON.parse('{"__proto__": {"polluted": true}, "safe": 1}') as Record<string, unknown>;
  const cause = fixedStack(new TypeError("inner cause"), "TypeError: inner cause\n    at golden (golden.ts:1:1)");
  const error = fixedStack(new Error("outer", { cause }), "Error: outer\n    at golden (golden.ts:2:2)");
  (error as Error & { code?: string }).code = "E_GOLDEN";
  const aggregate = fixedStack(new AggregateError([fixedStack(new RangeError("r1"), "RangeError: r1")], "many"), "AggregateError: many");
  const appError = fixedStack(new GoldenAppError("not found", 404), "GoldenAppError: not found\n    at app (app.ts:3:3)");
  const buffer = new ArrayBuffer(4);
  new DataView(buffer).setUint32(0, 0xdeadbeef);
  return {
    messages: [
      new SystemMessage({ content: "You are golden.", id: "msg-system" }),
      new HumanMessage({ content: "hello", id: "msg-human", name: "alice" }),
      new AIMessage({
        content: "calling a tool",
        id: "msg-ai",
        tool_calls: [{ id: "call-1", name: "lookup", args: { q: "weather", n: 3 }, type: "tool_call" }],
      }),
      new ToolMessage({ content: "sunny", tool_call_id: "call-1", id: "msg-tool", name: "lookup" }),
      new AIMessageChunk({ content: "partial", id: "msg-chunk" }),
      new RemoveMessage({ id: "msg-old" }),
    ],
    // LC_EXACT: a record with values JSON cannot carry.
    exactMessage: new AIMessage({ content: "exact", id: "msg-exact", additional_kwargs: { nan: NaN, missing: undefined, big: 12n } }),
    send: new Send("worker", { item: 1 }),
    command: new Command({ goto: "next", update: { count: 1 }, resume: "yes" }),
    commandSend: new Command({ goto: [new Send("a", { x: 1 })] }),
    overwrite: new Overwrite(["replaced"]),
    interrupts: [{ value: { question: "approve?" }, id: "interrupt-1" }],
    delta: new DeltaSnapshot([new HumanMessage({ content: "snap", id: "msg-snap" })]),
    deltaNumber: new DeltaSnapshot(3),
    map: new Map<unknown, unknown>([
      ["a", 1],
      [2, "two"],
      [null, [true]],
    ]),
    set: new Set<unknown>(["x", 1, null]),
    date: new Date(Date.UTC(2026, 10, 30, 12, 34, 56, 789)),
    bytes: new Uint8Array([0, 1, 2, 254, 255]),
    emptyBytes: new Uint8Array(0),
    typed: {
      f32: new Float32Array([1.5, -2.25]),
      f64: new Float64Array([Math.PI]),
      i16: new Int16Array([-1, 2]),
      u32: new Uint32Array([4294967295]),
      big64: new BigInt64Array([-5n]),
      arrayBuffer: buffer,
      dataView: new DataView(new Uint8Array([9, 8, 7]).buffer),
    },
    bigints: [0n, 42n, -42n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n, -(2n ** 100n)],
    numbers: [0, -0, 1.5, -1, 2 ** 31, 2 ** 53 - 1, NaN, Infinity, -Infinity, 1e-300],
    nothing: { undef: undefined, nil: null, arr: [undefined, null] },
    regexp: /gold(en)?/giu,
    errors: [error, aggregate],
    appError,
    protoObject,
    point: new GoldenPoint(3, 4),
    money: new GoldenMoney(123456789012345678901234567890n),
    strings: ["", "ünïcødé ✓", "\u0000nul", "a".repeat(40)],
    nested: { deep: { deeper: [{ k: "v" }] } },
  };
}

/** The same value with Send/Command/Overwrite registered as classes. */
export function msgpackClassValue(): Record<string, unknown> {
  return {
    send: new Send("worker", { item: 2 }),
    command: new Command({ goto: "next", update: { count: 2 } }),
    overwrite: new Overwrite({ a: 1 }),
  };
}

/** The EXT codes of src/serde/msgpack/wire.ts as frozen today (and Python's DeltaSnapshot code 7). */
export const FROZEN_EXT = {
  DELTA_SNAPSHOT: 7,
  UNDEFINED: 48,
  NEGATIVE_ZERO: 49,
  MAP: 50,
  SET: 51,
  ERROR: 52,
  REGEXP: 53,
  LC: 54,
  CLASS: 55,
  PROTO_OBJECT: 56,
  BINARY: 57,
  LC_EXACT: 58,
} as const;

/** True when `bytes` contains `fixext1(code, 0x00)`. */
export function hasExtension(bytes: Uint8Array, code: number): boolean {
  for (let i = 0; i + 2 < bytes.length; i++) {
    if (bytes[i] === 0xd4 && bytes[i + 1] === code && bytes[i + 2] === 0x00) return true;
  }
  return false;
}

// ---------------------------------------------------------------- what the test reads back

/** The saver methods the read-back uses (IndexedDBSaver's, structurally). */
export interface ReadableSaver {
  getTuple(config: { configurable: Record<string, unknown> }): Promise<unknown>;
  list(config: { configurable?: Record<string, unknown> }, options?: { filter?: Record<string, unknown>; limit?: number; before?: unknown }): AsyncGenerator<unknown>;
  getDeltaChannelHistory(options: { config: { configurable: Record<string, unknown> }; channels: string[] }): Promise<unknown>;
  listThreads(options?: { limit?: number }): AsyncGenerator<unknown>;
}

/** Every item of `iterable`, in order. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

export const SAVER_THREADS = ["t-golden", "t-chat", "t-pruned", "t-deleted"] as const;
export const SUBGRAPH_NS = "child:1f0c0000-0000-6000-8000-00000000s001";

/** Checkpoint id `n` of the hand-written threads. */
export function checkpointId(n: number): string {
  return `1f0c0000-0000-6000-8000-${String(n).padStart(12, "0")}`;
}

/** Everything the saver answers about the golden threads, in comparable form. */
export async function readSaver(saver: ReadableSaver): Promise<Record<string, Tagged>> {
  const out: Record<string, Tagged> = {};
  for (const thread of SAVER_THREADS) {
    out[`latest:${thread}`] = comparable(await saver.getTuple({ configurable: { thread_id: thread } }));
    out[`list:${thread}`] = comparable(await collect(saver.list({ configurable: { thread_id: thread } })));
  }
  out["root-only"] = comparable(await collect(saver.list({ configurable: { thread_id: "t-golden", checkpoint_ns: "" } })));
  out["subgraph-latest"] = comparable(await saver.getTuple({ configurable: { thread_id: "t-golden", checkpoint_ns: SUBGRAPH_NS } }));
  out["by-id"] = comparable(await saver.getTuple({ configurable: { thread_id: "t-golden", checkpoint_ns: "", checkpoint_id: checkpointId(1) } }));
  out["filtered"] = comparable(await collect(saver.list({ configurable: { thread_id: "t-golden" } }, { filter: { source: "loop" } })));
  out["before-limit"] = comparable(
    await collect(saver.list({ configurable: { thread_id: "t-golden", checkpoint_ns: "" } }, { before: { configurable: { checkpoint_id: checkpointId(3) } }, limit: 1 })),
  );
  out["all-threads-ids"] = comparable(
    (await collect(saver.list({}))).map((t) => {
      const c = (t as { config: { configurable: Record<string, unknown> } }).config.configurable;
      return [c.thread_id, c.checkpoint_ns, c.checkpoint_id];
    }),
  );
  for (const thread of ["t-chat", "t-pruned"]) {
    out[`delta-history:${thread}`] = comparable(await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread } }, channels: ["messages"] }));
  }
  out["delta-history:t-golden"] = comparable(
    await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: "t-golden", checkpoint_ns: "" } }, channels: ["messages", "counter"] }),
  );
  out["list-threads"] = comparable(await collect(saver.listThreads()));
  return out;
}

/** The store methods the read-back uses (IndexedDBStore's, structurally). */
export interface ReadableStore {
  get(namespace: string[], key: string): Promise<unknown>;
  search(prefix: string[], options?: { filter?: Record<string, unknown>; limit?: number; offset?: number; query?: string }): Promise<unknown[]>;
  listNamespaces(options?: { prefix?: string[]; suffix?: string[]; maxDepth?: number; limit?: number; offset?: number }): Promise<unknown>;
}

export const STORE_KEYS: [string[], string][] = [
  [["users", "u1", "memories"], "m1"],
  [["users", "u1", "memories"], "m2"],
  [["users", "u1", "memories"], "m3"],
  [["users", "u2", "memories"], "m1"],
  [["users", "u2", "memories"], "tmp"],
  [["users", "u1", "prefs"], "theme"],
  [["docs"], "readme"],
];

/** Everything the store answers about the golden items, in comparable form. */
export async function readStore(store: ReadableStore): Promise<Record<string, Tagged>> {
  const out: Record<string, Tagged> = {};
  for (const [namespace, key] of STORE_KEYS) out[`get:${namespace.join("/")}:${key}`] = comparable(await store.get(namespace, key));
  out["search:users"] = comparable(await store.search(["users"], { limit: 20 }));
  out["search:users:offset"] = comparable(await store.search(["users"], { limit: 2, offset: 1 }));
  out["search:u1:query"] = comparable(await store.search(["users", "u1"], { query: "coffee in the morning" }));
  out["search:all:query"] = comparable(await store.search([], { query: "pets", limit: 3 }));
  out["search:filter"] = comparable(await store.search(["users"], { filter: { text: "prefers tea" } }));
  out["search:filter+query"] = comparable(await store.search([], { query: "typescript", filter: { lang: "en" } }));
  out["namespaces"] = comparable(await store.listNamespaces({}));
  out["namespaces:prefix"] = comparable(await store.listNamespaces({ prefix: ["users"] }));
  out["namespaces:suffix"] = comparable(await store.listNamespaces({ suffix: ["memories"] }));
  out["namespaces:depth"] = comparable(await store.listNamespaces({ maxDepth: 2 }));
  return out;
}

// ---------------------------------------------------------------- the hand-written scenarios

/** The saver methods the scenarios use. */
export type WritableSaver = BaseCheckpointSaver & { deleteThread(threadId: string): Promise<void> };

export function cp(n: number, values: Record<string, unknown>, versions: Record<string, number | string>, seen: Record<string, Record<string, number | string>> = {}): Checkpoint {
  return {
    v: 4,
    id: checkpointId(n),
    ts: `2026-11-30T12:00:${String(n).padStart(2, "0")}.000Z`,
    channel_values: values,
    channel_versions: versions,
    versions_seen: seen,
  };
}

export function fixedError(): Error {
  const error = new Error("tool failed");
  error.stack = "Error: tool failed\n    at tool (golden.ts:1:1)";
  return error;
}

/** The hand-written thread: root + subgraph namespace, parents, pending writes with special channels. */
export async function writeGoldenThread(saver: WritableSaver): Promise<void> {
  const thread = "t-golden";
  const root = { configurable: { thread_id: thread, checkpoint_ns: "" } };
  const human = new HumanMessage({ content: "hello", id: "h1" });
  const ai = new AIMessage({ content: "hi there", id: "a1" });
  const meta = (m: Record<string, unknown>) => m as CheckpointMetadata;

  await saver.put(
    root,
    cp(1, { messages: [human], counter: 1, __start__: { messages: [human] } }, { messages: 1, counter: 1, __start__: 1 }),
    meta({ source: "input", step: -1, parents: {}, run_id: "run-1", tags: ["golden"], nested: { deep: [1, { x: null }], when: "2026-11-30" } }),
    { messages: 1, counter: 1, __start__: 1 },
  );
  await saver.putWrites({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(1) } }, [["messages", [ai]], ["counter", 2]], "task-a", "~__pregel_pull, agent");

  // run_id only in config.metadata: copied into the stored metadata.
  await saver.put(
    { configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(1) }, metadata: { run_id: "run-2" } },
    cp(2, { messages: [human, ai], counter: 2 }, { messages: 2, counter: 2, __start__: 1 }, { agent: { __start__: 1 } }),
    meta({ source: "loop", step: 0, parents: {} }),
    { messages: 2, counter: 2 },
  );
  const c2 = { configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(2) } };
  await saver.putWrites(
    c2,
    [
      ["__error__", fixedError()],
      ["__interrupt__", [{ value: { question: "approve?" }, id: "interrupt-1" }]],
      ["__resume__", ["yes"]],
      ["__scheduled__", null],
    ],
    "task-b",
    "~__pregel_pull, tools",
  );
  await saver.putWrites(c2, [["messages", [new AIMessage({ content: "late", id: "a2" })]], ["branch:to:agent", null]], "task-c", "~__pregel_push, 0");

  // A subgraph checkpoint with a string version and values of many types.
  await saver.put(
    { configurable: { thread_id: thread, checkpoint_ns: SUBGRAPH_NS } },
    cp(10, { inner: "x", map: new Map([["k", new Set([1, 2])]]), when: new Date(Date.UTC(2026, 0, 2)), bytes: new Uint8Array([1, 2, 3]), big: 2n ** 70n, undef: undefined }, {
      inner: "00000000000000000000000000000001.0.5",
      map: "00000000000000000000000000000001.0.6",
      when: 1,
      bytes: 1,
      big: 1,
      undef: 1,
    }),
    meta({ source: "loop", step: 1, parents: { "": checkpointId(2) }, run_id: "run-2" }),
    { inner: "00000000000000000000000000000001.0.5", map: "00000000000000000000000000000001.0.6", when: 1, bytes: 1, big: 1, undef: 1 },
  );
  await saver.putWrites({ configurable: { thread_id: thread, checkpoint_ns: SUBGRAPH_NS, checkpoint_id: checkpointId(10) } }, [["inner", "y"]], "task-sub", "~__pregel_pull, inner");

  // c3: only counter changes (messages keeps version 2, no new blob); a channel version without a value.
  await saver.put(
    c2,
    cp(3, { messages: [human, ai], counter: 3, send: new Send("worker", { n: 1 }), cmd: new Command({ goto: "x" }), ow: new Overwrite([1]) }, { messages: 2, counter: 3, "branch:to:agent": 3, send: 3, cmd: 3, ow: 3 }),
    meta({ source: "update", step: 1, parents: {}, run_id: "run-3", writes: { agent: { note: "done" } } }),
    { counter: 3, "branch:to:agent": 3, send: 3, cmd: 3, ow: 3 },
  );
}

/** A deleted thread: the tombstone in `meta` and its copy in `writes`. */
export async function writeDeletedThread(saver: WritableSaver): Promise<void> {
  const thread = "t-deleted";
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp(20, { x: 1 }, { x: 1 }), { source: "input", step: -1, parents: {} } as CheckpointMetadata, { x: 1 });
  await saver.putWrites({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(20) } }, [["x", 2]], "task-d");
  await saver.deleteThread(thread);
}

/** A late put on the deleted thread: dropped by the tombstone. */
export async function latePutIsDropped(saver: WritableSaver): Promise<boolean> {
  await saver.put(
    { configurable: { thread_id: "t-deleted", checkpoint_ns: "", checkpoint_id: checkpointId(20) } },
    cp(21, { x: 3 }, { x: 2 }),
    { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
    { x: 2 },
  );
  return (await saver.getTuple({ configurable: { thread_id: "t-deleted" } })) === undefined;
}

/** The store's items: nested namespaces, an update, a delete, an unindexed put. */
export async function writeStoreScenario(store: BaseStore): Promise<void> {
  const at = new Date(Date.UTC(2026, 10, 30, 8, 0, 0));
  await store.put(["users", "u1", "memories"], "m1", { text: "likes coffee in the morning", lang: "en", at });
  await store.put(["users", "u1", "memories"], "m2", { text: "has two cats", lang: "en" });
  await store.put(["users", "u1", "memories"], "m3", { text: "writes rust and typescript", lang: "en", tags: ["code"] });
  await store.put(["users", "u2", "memories"], "m1", { text: "prefers tea", lang: "fr" });
  await store.put(["users", "u2", "memories"], "tmp", { text: "temporary" });
  await store.delete(["users", "u2", "memories"], "tmp");
  await store.put(["users", "u1", "prefs"], "theme", { theme: "dark", at, counts: { a: 1 }, nothing: null }, false);
  await store.put(["docs"], "readme", { text: "dogs and pets", n: 1, lang: "en", nested: { deep: [1, 2] } });
  await store.put(["users", "u1", "memories"], "m2", { text: "has two cats and dogs", lang: "en" });
}

// ---------------------------------------------------------------- frozen saver layouts

/** The saver database layout of schema version 1 (SAVER_UPGRADES step 1), frozen. */
export const SAVER_SCHEMA_1 = {
  version: 1,
  stores: [
    { name: "blobs", keyPath: ["thread_id", "checkpoint_ns", "channel", "version"], autoIncrement: false, indexes: [] },
    {
      name: "checkpoints",
      keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id"],
      autoIncrement: false,
      indexes: [
        {
          name: "by_parent",
          keyPath: ["thread_id", "checkpoint_ns", "parent_checkpoint_id"],
          unique: false,
          multiEntry: false,
        },
        { name: "by_run", keyPath: "run_id", unique: false, multiEntry: false },
      ],
    },
    { name: "meta", keyPath: "name", autoIncrement: false, indexes: [] },
    {
      name: "threads",
      keyPath: "thread_id",
      autoIncrement: false,
      indexes: [{ name: "by_updated", keyPath: "updated_at", unique: false, multiEntry: false }],
    },
    {
      name: "writes",
      keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
      autoIncrement: false,
      indexes: [
        {
          name: "by_channel",
          keyPath: ["thread_id", "checkpoint_ns", "channel", "checkpoint_id"],
          unique: false,
          multiEntry: false,
        },
      ],
    },
  ],
};

/** Schema version 3: version 2 added two indexes of the checkpoints store for thread-wide and cross-thread `list`; version 3 changed no store (it marks row binding version 3). Frozen. */
export const SAVER_SCHEMA_3 = {
  version: 3,
  stores: SAVER_SCHEMA_1.stores.map((s) =>
    s.name !== "checkpoints"
      ? s
      : {
          ...s,
          indexes: [
            { name: "by_checkpoint", keyPath: "checkpoint_id", unique: false, multiEntry: false },
            ...s.indexes,
            {
              name: "by_thread_checkpoint",
              keyPath: ["thread_id", "checkpoint_id"],
              unique: false,
              multiEntry: false,
            },
          ],
        },
  ),
};

/**
 * Schema version 4: version 3 plus row format 2's `by_value` index
 * (multiEntry over the blob keys of the values a row holds inline) and the
 * indexes of what changed since a time (sync's rounds, src/sync/changes.ts):
 * checkpoints by `created_at`, writes by `written_at`. Writes stored from
 * version 4 on carry `written_at`. The same step marks row binding version 4
 * (issue 23). Frozen.
 */
export const SAVER_SCHEMA_4 = {
  version: 4,
  stores: SAVER_SCHEMA_3.stores.map((s) => {
    const added =
      s.name === "checkpoints"
        ? [
            { name: "by_created", keyPath: "created_at", unique: false, multiEntry: false },
            { name: "by_value", keyPath: "inline_keys", unique: false, multiEntry: true },
          ]
        : s.name === "writes"
          ? [{ name: "by_written", keyPath: "written_at", unique: false, multiEntry: false }]
          : [];
    return added.length === 0
      ? s
      : { ...s, indexes: [...s.indexes, ...added].sort((a, b) => (a.name < b.name ? -1 : 1)) };
  }),
};

/**
 * Schema version 5: version 4 plus `by_absent` (multiEntry over the blob
 * keys of the channel versions a checkpoint row lists as having no stored
 * value, `absent_keys`; src/saver/absent.ts). Frozen.
 */
export const SAVER_SCHEMA_5 = {
  version: 5,
  stores: SAVER_SCHEMA_4.stores.map((s) =>
    s.name !== "checkpoints"
      ? s
      : {
          ...s,
          indexes: [...s.indexes, { name: "by_absent", keyPath: "absent_keys", unique: false, multiEntry: true }].sort(
            (a, b) => (a.name < b.name ? -1 : 1),
          ),
        },
  ),
};

/**
 * Schema version 6: version 5 less `by_parent` (no code read it; its entries
 * took about a sixth of a long chat's bytes on disk). No row changes. Frozen.
 */
export const SAVER_SCHEMA_6 = {
  version: 6,
  stores: SAVER_SCHEMA_5.stores.map((s) =>
    s.name !== "checkpoints" ? s : { ...s, indexes: s.indexes.filter((index) => index.name !== "by_parent") },
  ),
};
