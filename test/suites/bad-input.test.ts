/**
 * Bad input (reliability issue, part 4): each case gives a clear error and
 * leaves the other data intact.
 *
 * - ids: non-strings, empty, `__proto__`/`constructor`/`prototype`, a missing
 *   `thread_id`, in every method and every id position;
 * - values that cannot be serialized (functions, symbols, cycles):
 *   `SerializationError`, and no partial checkpoint;
 * - a large value (4 MiB at the fast depth, 20 MiB at the full depth), stored and read back;
 * - rows of random bytes written straight into every object store (after
 *   `saver.close()`): reading one gives a package error (`SerializationError`
 *   for a value, the row named), the other rows still read and write;
 * - databases of other versions: an empty "v0" database made by a bare
 *   `indexedDB.open(name)`, a v1 database written by another saver instance,
 *   an upgrade in place by the schema-step mechanism, a database newer than
 *   the code;
 * - IndexedDB unavailable: no global factory, a factory whose `open` throws
 *   (Firefox private mode before 115), one whose open request fails.
 *
 * Runs in Node (fake-indexeddb) and Chromium.
 */
import {
  ERROR,
  emptyCheckpoint,
  uuid6,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { byDepth } from "../support/depth.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { Database } from "../../src/idb/database.js";
import { SAVER_UPGRADES, type SaverSchema } from "../../src/saver/schema.js";
import {
  DecryptionError,
  IndexedDBCheckpointError,
  IndexedDBUnavailableError,
  SerializationError,
} from "../../src/core/errors.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { failingFactory, newerSchemaFactory, throwingFactory } from "../support/reliability/factories.js";
import { openRaw, putRaw, rowsOfThread, scanAll, storedValues } from "../support/reliability/raw.js";

const savers: IndexedDBSaver[] = [];
const names = new Set<string>();

afterEach(async () => {
  vi.unstubAllGlobals();
  await Promise.all(savers.splice(0).map((saver) => saver.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
  names.clear();
});

function newSaver(
  dbName = freshDbName("bad-input"),
  options: Partial<ConstructorParameters<typeof IndexedDBSaver>[0]> = {},
): IndexedDBSaver {
  names.add(dbName);
  const saver = new IndexedDBSaver({ dbName, ...options });
  savers.push(saver);
  return saver;
}

const meta = (step = 0, extra: Record<string, unknown> = {}) =>
  ({ source: "loop", step, parents: {}, ...extra }) as CheckpointMetadata;
const cfg = (thread_id: unknown, checkpoint_ns: unknown = "", checkpoint_id?: unknown): RunnableConfig => ({
  configurable:
    checkpoint_id === undefined ? { thread_id, checkpoint_ns } : { thread_id, checkpoint_ns, checkpoint_id },
});

function checkpoint(values: Record<string, unknown> = {}, versions: Record<string, number> = {}): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(0), channel_values: values, channel_versions: versions };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** What `promise` rejected with (fails if it resolved). */
async function rejection(promise: Promise<unknown> | AsyncIterable<unknown>): Promise<Error> {
  try {
    if (Symbol.asyncIterator in promise) await collect(promise as AsyncIterable<unknown>);
    else await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection, but it resolved");
}

/** A saver holding one good thread with a write and a child namespace; returns its state. */
async function seeded(saver: IndexedDBSaver) {
  const first = await saver.put(cfg("good"), checkpoint({ a: "one" }, { a: 1 }), meta(0), { a: 1 });
  const second = await saver.put(first, checkpoint({ a: "two", b: [1, 2] }, { a: 2, b: 2 }), meta(1, { tag: "x" }), {
    a: 2,
    b: 2,
  });
  await saver.putWrites(
    second,
    [
      ["a", "pending"],
      [ERROR, "boom"],
    ],
    "task-1",
  );
  await saver.put(cfg("good", "child:1"), checkpoint({ c: true }, { c: 1 }), meta(0), { c: 1 });
  return snapshot(saver);
}

/** Everything a reader sees of the good thread. */
async function snapshot(saver: IndexedDBSaver) {
  const view = (tuple: CheckpointTuple | undefined) =>
    tuple && {
      config: tuple.config,
      checkpoint: tuple.checkpoint,
      metadata: tuple.metadata,
      pendingWrites: tuple.pendingWrites,
      parent: tuple.parentConfig,
    };
  return {
    latest: view(await saver.getTuple(cfg("good"))),
    list: (await collect(saver.list({ configurable: { thread_id: "good" } }))).map(view),
  };
}

describe("bad ids", () => {
  const notIds: [string, unknown][] = [
    ["a number", 42],
    ["null", null],
    ["an object", { id: "t" }],
    ["an array", ["t"]],
    ["a boolean", true],
    ["the empty string", ""],
    ["__proto__", "__proto__"],
    ["constructor", "constructor"],
    ["prototype", "prototype"],
  ];

  it("are refused with a message naming the field, in every method and id position, and store nothing", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    const good = (await saver.getTuple(cfg("good")))!.config;
    const failures: string[] = [];
    const expectRefused = async (
      what: string,
      call: () => Promise<unknown> | AsyncIterable<unknown>,
      field: RegExp,
    ) => {
      let error: Error;
      try {
        error = await rejection(call() as Promise<unknown>);
      } catch (thrown) {
        error = thrown as Error; // thrown synchronously: also a clear refusal
      }
      if (!(error instanceof Error) || !field.test(error.message))
        failures.push(`${what}: ${String(error?.message ?? error)}`);
    };
    for (const [label, bad] of notIds) {
      const named = (name: string) => new RegExp(`"${name}"`);
      // Id positions of put.
      if (bad !== null)
        await expectRefused(
          `put thread_id ${label}`,
          () => saver.put(cfg(bad), checkpoint(), meta(), {}),
          named("thread_id"),
        );
      // (A null namespace means the root one, as in MemorySaver.)
      if (bad !== "" && bad !== null)
        await expectRefused(
          `put checkpoint_ns ${label}`,
          () => saver.put(cfg("t", bad), checkpoint(), meta(), {}),
          named("checkpoint_ns"),
        );
      if (bad !== "" && bad !== null)
        await expectRefused(
          `put parent ${label}`,
          () => saver.put(cfg("t", "", bad), checkpoint(), meta(), {}),
          named("checkpoint_id"),
        );
      await expectRefused(
        `put checkpoint.id ${label}`,
        () => saver.put(cfg("t"), { ...checkpoint(), id: bad as string }, meta(), {}),
        named("checkpoint.id"),
      );
      if (typeof bad === "string") {
        await expectRefused(
          `put channel ${label}`,
          () => saver.put(cfg("t"), checkpoint({ [bad]: 1 }, { [bad]: 1 }), meta(), { [bad]: 1 }),
          named("channel"),
        );
      }
      // putWrites.
      if (bad !== null)
        await expectRefused(
          `putWrites thread_id ${label}`,
          () => saver.putWrites(cfg(bad, "", good.configurable!.checkpoint_id), [["a", 1]], "task"),
          named("thread_id"),
        );
      if (bad !== "" && bad !== null) {
        await expectRefused(
          `putWrites checkpoint_id ${label}`,
          () => saver.putWrites(cfg("good", "", bad), [["a", 1]], "task"),
          named("checkpoint_id"),
        );
      }
      await expectRefused(
        `putWrites task_id ${label}`,
        () => saver.putWrites(good, [["a", 1]], bad as string),
        named("task_id"),
      );
      await expectRefused(
        `putWrites channel ${label}`,
        () => saver.putWrites(good, [[bad as string, 1]], "task"),
        named("channel"),
      );
      // Reads.
      if (bad !== null)
        await expectRefused(`getTuple thread_id ${label}`, () => saver.getTuple(cfg(bad)), named("thread_id"));
      if (bad !== "" && bad !== null)
        await expectRefused(
          `getTuple checkpoint_ns ${label}`,
          () => saver.getTuple(cfg("good", bad)),
          named("checkpoint_ns"),
        );
      if (bad !== "" && bad !== null)
        await expectRefused(
          `getTuple checkpoint_id ${label}`,
          () => saver.getTuple(cfg("good", "", bad)),
          named("checkpoint_id"),
        );
      if (bad !== "" && bad !== null && bad !== true) {
        // (list reads `thread_id || undefined` as "every thread", as MemorySaver does.)
        await expectRefused(
          `list thread_id ${label}`,
          () => saver.list({ configurable: { thread_id: bad } }),
          named("thread_id"),
        );
      }
      if (bad !== "" && bad !== null)
        await expectRefused(`list checkpoint_ns ${label}`, () => saver.list(cfg("good", bad)), named("checkpoint_ns"));
      // Thread lifecycle.
      await expectRefused(`deleteThread ${label}`, () => saver.deleteThread(bad as string), named("thread_id"));
      await expectRefused(
        `copyThread source ${label}`,
        () => saver.copyThread(bad as string, "copy"),
        named("sourceThreadId"),
      );
      await expectRefused(
        `copyThread target ${label}`,
        () => saver.copyThread("good", bad as string),
        named("targetThreadId"),
      );
      await expectRefused(`prune ${label}`, () => saver.prune([bad as string]), named("thread_id"));
      await expectRefused(`deleteForRuns ${label}`, () => saver.deleteForRuns([bad as string]), named("run_id"));
      await expectRefused(
        `getDeltaChannelHistory channel ${label}`,
        () => saver.getDeltaChannelHistory({ config: good, channels: [bad as string] }),
        named("channel"),
      );
    }
    expect(failures).toEqual([]);
    // Nothing was stored, nothing was polluted, the good thread is as it was.
    expect(await snapshot(saver)).toEqual(before);
    expect((await collect(saver.listThreads())).map((t) => t.threadId)).toEqual(["good"]);
    expect(
      (await collect(saver.list({ configurable: {} }))).map((t) => t.config.configurable?.thread_id).sort(),
    ).toEqual(["good", "good", "good"]);
    expect(({} as Record<string, unknown>).t).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("good");
    expect(Object.prototype).not.toHaveProperty("task");
  });

  it("a missing thread_id: put and putWrites say what to pass, reads find nothing", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    const putError = await rejection(saver.put({ configurable: {} }, checkpoint(), meta(), {}));
    expect(putError.message).toMatch(/missing a required "thread_id"/);
    expect(putError.message).toMatch(/configurable: \{ thread_id/);
    expect((await rejection(saver.put({}, checkpoint(), meta(), {}))).message).toMatch(
      /missing a required "configurable"/,
    );
    expect(
      (await rejection(saver.putWrites({ configurable: { checkpoint_id: uuid6(0) } }, [["a", 1]], "task"))).message,
    ).toMatch(/"thread_id"/);
    expect(
      (await rejection(saver.putWrites({ configurable: { thread_id: "good" } }, [["a", 1]], "task"))).message,
    ).toMatch(/"checkpoint_id"/);
    expect((await rejection(saver.deleteThread(undefined as unknown as string))).message).toMatch(/"thread_id"/);
    // As every LangGraph saver: no thread, no checkpoint.
    expect(await saver.getTuple({ configurable: {} })).toBeUndefined();
    expect(await saver.getDeltaChannelHistory({ config: { configurable: {} }, channels: ["a"] })).toEqual({
      a: { writes: [] },
    });
    expect(await snapshot(saver)).toEqual(before);
  });

  it("a channel version that is not a string or a number (NaN, null, true, an object): put says which channel, stores nothing", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    const parent = (await saver.getTuple(cfg("good")))!.config;
    for (const version of [NaN, null, true, { v: 3 }]) {
      const bad = { a: version } as unknown as Record<string, number>;
      // Before: NaN failed in IndexedDB with a DataError; the others were stored, and read back as a row
      // "altered outside the saver".
      const inCheckpoint = await rejection(saver.put(parent, checkpoint({ a: "x" }, bad), meta(2), { a: 3 }));
      expect(inCheckpoint.message).toMatch(/"checkpoint.channel_versions": channel "a" has version /);
      // In newVersions only (the blob row it keys): refused before any request, not a transaction that
      // IndexedDB aborts mid-way (its refused requests' rejections went unhandled).
      const inNew = await rejection(saver.put(parent, checkpoint({ a: "x" }, { a: 3 }), meta(2), bad));
      expect(inNew.message).toMatch(/"newVersions": channel "a" has version /);
    }
    expect(await snapshot(saver)).toEqual(before);
  });
});

describe("values that cannot be serialized", () => {
  it("give SerializationError naming the problem, and store no part of the checkpoint or write", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    const parent = (await saver.getTuple(cfg("good")))!.config;
    const cycle: Record<string, unknown> = { name: "loop" };
    cycle.self = cycle;
    const cases: [string, () => Promise<unknown>, RegExp][] = [
      [
        "a function as a channel value",
        () => saver.put(parent, checkpoint({ a: "ok", b: () => 1 }, { a: 3, b: 3 }), meta(2), { a: 3, b: 3 }),
        /function/,
      ],
      [
        "a cycle in a channel value",
        () => saver.put(parent, checkpoint({ a: "ok", b: cycle }, { a: 3, b: 3 }), meta(2), { a: 3, b: 3 }),
        /cycle|circular/i,
      ],
      [
        "a cycle in the metadata",
        () => saver.put(parent, checkpoint({ a: "ok" }, { a: 3 }), meta(2, { loop: cycle }), { a: 3 }),
        /cycle|circular/i,
      ],
      [
        "a symbol in the metadata",
        () => saver.put(parent, checkpoint({ a: "ok" }, { a: 3 }), meta(2, { s: Symbol("s") }), { a: 3 }),
        /symbol/,
      ],
      [
        "a function in a write",
        () =>
          saver.putWrites(
            parent,
            [
              ["a", "fine"],
              ["b", { f() {} }],
            ],
            "task-2",
          ),
        /function/,
      ],
      [
        "a cycle in a write",
        () =>
          saver.putWrites(
            parent,
            [
              ["a", "fine"],
              ["b", cycle],
            ],
            "task-2",
          ),
        /cycle|circular/i,
      ],
    ];
    for (const [what, call, problem] of cases) {
      const error = await rejection(call());
      expect(error, what).toBeInstanceOf(SerializationError);
      expect(error.message, what).toMatch(problem);
    }
    expect(await snapshot(saver)).toEqual(before);
    // Raw: no row of a failed checkpoint, no write of task-2, no extra value (blob rows or inline).
    const rows = rowsOfThread(await scanAll(saver.dbName), "good");
    expect(rows.checkpoints).toHaveLength(3);
    expect(rows.writes.filter((row) => row.task_id === "task-2")).toEqual([]);
    expect(storedValues(rows)).toEqual(["a@1", "a@2", "b@2", "c@1"]);
  });
});

/**
 * MiB of the large value: 4 at the fast depth, 20 at the full depth. Either
 * is far past every size where the encoding changes form (msgpack's 32-bit
 * lengths from 64 KiB, Chromium's blob-backed IndexedDB values from 64 KiB).
 */
const BIG_MIB = byDepth(4, 20);

describe(`a ${BIG_MIB} MiB value`, () => {
  it("is stored and read back, as a channel value and as a write", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    const big = new Uint8Array(BIG_MIB * 1024 * 1024);
    for (let i = 0; i < big.length; i += 65_536) crypto.getRandomValues(big.subarray(i, i + 65_536));
    const text = "0123456789abcdef".repeat((BIG_MIB * 1024 * 1024) / 16);
    const started = performance.now();
    const config = await saver.put(cfg("big"), checkpoint({ blob: big, small: 1 }, { blob: 1, small: 1 }), meta(0), {
      blob: 1,
      small: 1,
    });
    await saver.putWrites(config, [["text", text]], "task");
    const stored = performance.now() - started;
    const tuple = await saver.getTuple(cfg("big"));
    const read = performance.now() - started - stored;
    const value = tuple?.checkpoint.channel_values.blob as Uint8Array;
    expect(value).toBeInstanceOf(Uint8Array);
    expect(value.length).toBe(big.length);
    // Compare without a diff of megabytes on failure.
    let same = true;
    for (let i = 0; i < big.length && same; i += 4099) same = value[i] === big[i];
    expect(same && value[big.length - 1] === big[big.length - 1]).toBe(true);
    expect(tuple?.checkpoint.channel_values.small).toBe(1);
    expect(tuple?.pendingWrites?.[0]?.[2] === text).toBe(true);
    expect(await snapshot(saver)).toEqual(before);
    console.info(
      `[bad-input] ${BIG_MIB} MiB value + ${BIG_MIB} MiB write: stored in ${stored.toFixed(0)} ms, read back in ${read.toFixed(0)} ms`,
    );
  }, 60_000);
});

describe("rows of random bytes in every object store", () => {
  const random = (n: number) => {
    const bytes = new Uint8Array(n);
    crypto.getRandomValues(bytes);
    return bytes;
  };

  it("give a package error naming what failed when read; every other row still reads and writes", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    // Two threads whose own rows are fine, to be spoiled below: one blob, one write.
    // (A value too large to sit inline in its row, row format 2: it gets the blob row spoiled below.)
    const blobThread = await saver.put(cfg("bad-blob"), checkpoint({ a: "x".repeat(4096) }, { a: 7 }), meta(0), {
      a: 7,
    });
    const writeThread = await saver.put(cfg("bad-write"), checkpoint({ a: 1 }, { a: 7 }), meta(0), { a: 7 });
    await saver.putWrites(writeThread, [["a", "fine"]], "task");
    await saver.close();

    const id = uuid6(0);
    const row = (thread_id: string, fields: Record<string, unknown>) => ({
      thread_id,
      checkpoint_ns: "",
      checkpoint_id: id,
      created_at: 1,
      channel_versions: {},
      ...fields,
    });
    await putRaw(saver.dbName, "checkpoints", [
      // Values of random bytes under the right type tag, under a random tag, and in place of the [type, bytes] pairs.
      row("bad-value", { checkpoint: ["msgpack", random(64)], metadata: ["msgpack", random(64)] }),
      row("bad-type", { checkpoint: [String.fromCharCode(...random(8)), random(64)], metadata: ["json", random(64)] }),
      row("bad-fields", {
        checkpoint: random(64),
        metadata: random(64),
        channel_versions: random(16),
        created_at: random(4),
      }),
      row("null-fields", { checkpoint: null, metadata: null, channel_versions: null, created_at: null }),
    ]);
    await putRaw(saver.dbName, "blobs", [
      { thread_id: "bad-blob", checkpoint_ns: "", channel: "a", version: 7, value: ["msgpack", random(100)] },
    ]);
    await putRaw(saver.dbName, "writes", [
      {
        thread_id: "bad-write",
        checkpoint_ns: "",
        checkpoint_id: writeThread.configurable!.checkpoint_id,
        task_id: "task",
        idx: 0,
        channel: "a",
        task_path: "",
        value: ["msgpack", random(50)],
      },
      // A tombstone copy (the row putWrites reads) of random bytes.
      {
        thread_id: "bad-tombstone",
        checkpoint_ns: "\u0000tombstone",
        checkpoint_id: "",
        task_id: "",
        idx: 0,
        channel: "\u0000tombstone",
        task_path: "",
        value: ["tombstone", random(8)],
        tombstone: random(16),
      },
    ]);
    await putRaw(saver.dbName, "threads", [
      {
        thread_id: "bad-summary",
        updated_at: 1,
        latest: { checkpoint_ns: "", checkpoint_id: id, metadata: ["msgpack", random(30)] },
      },
    ]);
    await putRaw(saver.dbName, "meta", [
      { name: "format", value: random(10) },
      { name: "tombstone\u0000bad-tombstone", value: random(16) },
      { name: "unrelated", value: random(1000) },
    ]);

    const reader = newSaver(saver.dbName);
    const problems: string[] = [];
    const expectPackageError = async (
      what: string,
      call: () => Promise<unknown> | AsyncIterable<unknown>,
      kind: typeof IndexedDBCheckpointError = IndexedDBCheckpointError,
    ) => {
      const error = await rejection(call() as Promise<unknown>).catch((e: Error) => e);
      if (!(error instanceof kind)) problems.push(`${what}: ${(error as Error)?.name}: ${(error as Error)?.message}`);
    };
    for (const thread of ["bad-value", "bad-type", "bad-fields", "null-fields", "bad-blob", "bad-write"]) {
      await expectPackageError(`getTuple ${thread}`, () => reader.getTuple(cfg(thread)), SerializationError);
      await expectPackageError(
        `list ${thread}`,
        () => reader.list({ configurable: { thread_id: thread } }),
        SerializationError,
      );
      await expectPackageError(
        `list ${thread} with a filter`,
        () => reader.list({ configurable: { thread_id: thread } }, { filter: { source: "loop" } }),
        SerializationError,
      );
    }
    expect(await rejection(reader.getTuple(blobThread))).toBeInstanceOf(SerializationError);
    await expectPackageError("list of every thread", () => reader.list({ configurable: {} }), SerializationError);
    // A listing lists every thread: the unreadable ones with the error that explains them.
    const unreadable = (await collect(reader.listThreads())).filter((t) => t.error);
    if (!unreadable.every((t) => t.error instanceof SerializationError) || unreadable.length === 0)
      problems.push(
        `listThreads: ${unreadable.map((t) => `${t.threadId}: ${t.error?.name}`).join(", ") || "no error"}`,
      );
    const late = { configurable: { thread_id: "bad-tombstone", checkpoint_ns: "", checkpoint_id: uuid6(0) } };
    await expectPackageError("put on a thread with a corrupt tombstone", () =>
      reader.put(late, checkpoint(), meta(), {}),
    );
    await expectPackageError("putWrites on a thread with a corrupt tombstone", () =>
      reader.putWrites(late, [["a", 1]], "task"),
    );
    expect(problems).toEqual([]);

    // Every other row reads, and the database still takes writes.
    expect(await snapshot(reader)).toEqual(before);
    const next = await reader.put(cfg("good"), checkpoint({ a: "three" }, { a: 3 }), meta(2), { a: 3 });
    await reader.putWrites(next, [["a", "later"]], "task-9");
    expect((await reader.getTuple(cfg("good")))?.pendingWrites).toEqual([["task-9", "a", "later"]]);
    // The bad threads can be deleted like any other.
    for (const thread of ["bad-value", "bad-type", "bad-fields", "null-fields", "bad-blob", "bad-write"]) {
      await reader.deleteThread(thread);
      expect(await reader.getTuple(cfg(thread))).toBeUndefined();
    }
  });

  it("well-formed values of the wrong kind (metadata that is not an object; a write's task path, task id or channel that is not a string): a SerializationError naming the row, no TypeError", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    const c = await saver.put(cfg("edited"), checkpoint({ a: 1 }, { a: 1 }), meta(0), { a: 1 });
    await saver.putWrites(c, [["a", "w"]], "task");
    await saver.close();
    const rows = rowsOfThread(await scanAll(saver.dbName), "edited");
    const [row] = rows.checkpoints;
    const [write] = rows.writes;
    const reader = newSaver(saver.dbName);
    const reads: [string, () => Promise<unknown> | AsyncIterable<unknown>][] = [
      ["getTuple", () => reader.getTuple(cfg("edited"))],
      ["list", () => reader.list({ configurable: { thread_id: "edited" } })],
      ["list with a filter", () => reader.list({ configurable: { thread_id: "edited" } }, { filter: { step: 0 } })],
      ["exportThread", () => reader.exportThread("edited", { as: "bytes" })],
    ];
    // The thread summary holds the newest root checkpoint's metadata too: listed with its error.
    const summary = async () => (await collect(reader.listThreads())).find((t) => t.threadId === "edited")?.error;
    const serde = new MsgpackSerializer();
    const edits: [string, string, Record<string, unknown>, RegExp][] = [];
    for (const value of [null, "text", 7, ["a"]]) {
      const metadata = await serde.dumpsTyped(value);
      edits.push([
        "checkpoints",
        `metadata ${JSON.stringify(value)}`,
        { ...row, metadata },
        /"metadata".*not an object/,
      ]);
    }
    // Not the key fields: one more write, of the same checkpoint, whose task id is a number.
    const numeric = { ...write, task_id: 5, idx: 1 };
    for (const [field, value] of [
      ["task_path", ["a", "b"]],
      ["task_path", 3],
      ["channel", 4],
    ] as const)
      edits.push([
        "writes",
        `${field} ${JSON.stringify(value)}`,
        { ...write, [field]: value },
        /task id, task path or channel that is not a string/,
      ]);
    edits.push(["writes", "task_id 5", numeric, /task id, task path or channel that is not a string/]);
    for (const [store, what, edited, message] of edits) {
      await reader.close();
      await putRaw(saver.dbName, store as "checkpoints" | "writes", [edited]);
      for (const [name, read] of reads) {
        const error = await rejection(read() as Promise<unknown>);
        expect(error, `${what}: ${name}: ${error.message}`).toBeInstanceOf(SerializationError);
        expect(error.message, `${what}: ${name}`).toMatch(message);
        expect(error.message, `${what}: ${name}`).toMatch(/"edited"/);
      }
      if (store === "checkpoints") {
        const error = await summary();
        expect(error, `${what}: listThreads: ${error?.message}`).toBeInstanceOf(SerializationError);
        expect(error?.message, `${what}: listThreads`).toMatch(message);
      }
      // Put back as it was; the numeric task id goes.
      await reader.close();
      await putRaw(saver.dbName, store as "checkpoints" | "writes", [store === "checkpoints" ? row : write]);
      if (edited === numeric) {
        const db = await openRaw(saver.dbName);
        const tx = db.transaction(["writes"], "readwrite");
        tx.objectStore("writes").delete([
          write.thread_id,
          write.checkpoint_ns,
          write.checkpoint_id,
          5,
          1,
        ] as IDBValidKey);
        await new Promise((resolve) => (tx.oncomplete = resolve));
        db.close();
      }
    }
    expect((await reader.getTuple(cfg("edited")))?.pendingWrites).toEqual([["task", "a", "w"]]);
    expect(await snapshot(reader)).toEqual(before);
  });

  it("a row planted under a checkpoint id that is not a string (a number, a list): deleteThread deletes every row of the thread", async () => {
    for (const plantedId of [5, ["c9"]]) {
      const saver = newSaver();
      const before = await seeded(saver);
      const c = await saver.put(cfg("doomed"), checkpoint({ a: 1 }, { a: 1 }), meta(0), { a: 1 });
      await saver.putWrites(c, [["a", "w"]], "task");
      await saver.close();
      const rows = rowsOfThread(await scanAll(saver.dbName), "doomed");
      await putRaw(saver.dbName, "checkpoints", [{ ...rows.checkpoints[0], checkpoint_id: plantedId }]);
      await putRaw(saver.dbName, "writes", [{ ...rows.writes[0], checkpoint_id: plantedId }]);
      const reader = newSaver(saver.dbName);
      // Before: a number took the maximum id (5 > "" and "c…" <= 5 are both false), so the delete resolved
      // and kept every real row of the thread, under a tombstone whose id was the number 5.
      await reader.deleteThread("doomed");
      await reader.close();
      const left = rowsOfThread(await scanAll(saver.dbName), "doomed");
      expect(left.checkpoints, JSON.stringify(plantedId)).toEqual([]);
      expect(left.blobs, JSON.stringify(plantedId)).toEqual([]);
      expect(left.threads, JSON.stringify(plantedId)).toEqual([]);
      // Only the tombstone copy is left in writes, and both copies name a string id.
      expect(left.writes.map((row) => row.checkpoint_ns)).toEqual(["\u0000tombstone"]);
      const tombstone = left.meta.find((row) => String(row.name).startsWith("tombstone"))?.value as {
        max_deleted_id: unknown;
      };
      expect(tombstone.max_deleted_id).toBe(c.configurable!.checkpoint_id);
      const again = newSaver(saver.dbName);
      expect(await again.getTuple(cfg("doomed"))).toBeUndefined();
      expect(await snapshot(again)).toEqual(before);
    }
  });

  it("a row planted under a key whose thread id, namespace or checkpoint id is not a string: list and exportThread name it, no config with such an id", async () => {
    const plants: [string, Record<string, unknown>, () => Promise<unknown> | AsyncIterable<unknown>][] = [];
    const saver = newSaver();
    const before = await seeded(saver);
    const c = await saver.put(cfg("odd"), checkpoint({ a: 1 }, { a: 1 }), meta(0), { a: 1 });
    await saver.close();
    const [row] = rowsOfThread(await scanAll(saver.dbName), "odd").checkpoints;
    const reader = newSaver(saver.dbName);
    const ofThread = () => reader.list({ configurable: { thread_id: "odd" } });
    const everywhere = () => reader.list({ configurable: {} });
    const exported = () => reader.exportThread("odd", { as: "bytes" });
    plants.push(["namespace 5", { ...row, checkpoint_ns: 5 }, ofThread]);
    plants.push(["namespace 5, exported", { ...row, checkpoint_ns: 5 }, exported]);
    plants.push(["checkpoint id 5", { ...row, checkpoint_id: 5 }, ofThread]);
    // Before: "thread changed while it was being exported (checkpoint 5 ... disappeared). Export it again".
    plants.push(["checkpoint id 5, exported", { ...row, checkpoint_id: 5 }, exported]);
    plants.push(["thread id 5", { ...row, thread_id: 5 }, everywhere]);
    for (const [what, planted, read] of plants) {
      await reader.close();
      await putRaw(saver.dbName, "checkpoints", [planted]);
      // Before: list returned a tuple whose config named the number (a config LangGraph and getTuple refuse).
      const error = await rejection(read() as Promise<unknown>);
      expect(error, `${what}: ${error.message}`).toBeInstanceOf(SerializationError);
      expect(error.message, what).toMatch(/is stored under the key .*, not of strings: the row was altered/);
      await reader.deleteThread(String(planted.thread_id));
      await reader.close();
      await putRaw(saver.dbName, "checkpoints", [row]);
    }
    expect((await reader.getTuple(cfg("odd")))?.config).toEqual(c);
    expect(await snapshot(reader)).toEqual(before);
  });

  it("a checkpoint that decodes to something not an object (null, a string): reads and prune name the row, no TypeError", async () => {
    const saver = newSaver();
    const before = await seeded(saver);
    const c1 = await saver.put(cfg("edited"), checkpoint({ a: 1 }, { a: 1 }), meta(0), { a: 1 });
    await saver.put(c1, checkpoint({ a: 2 }, { a: 2 }), meta(1), { a: 2 });
    await saver.close();
    const [row] = rowsOfThread(await scanAll(saver.dbName), "edited").checkpoints;
    const serde = new MsgpackSerializer();
    for (const value of [null, "text"]) {
      await putRaw(saver.dbName, "checkpoints", [{ ...row, checkpoint: await serde.dumpsTyped(value) }]);
      const reader = newSaver(saver.dbName);
      // Before: prune (which checks the versions of a row holding values inline before deleting it) threw
      // "TypeError: Cannot read properties of null (reading 'channel_versions')".
      for (const [name, call] of [
        ["getTuple", () => reader.getTuple(cfg("edited", "", row!.checkpoint_id))],
        ["prune", () => reader.prune(["edited"])],
      ] as const) {
        const error = await rejection(call());
        expect(error, `${JSON.stringify(value)}: ${name}: ${error.message}`).toBeInstanceOf(SerializationError);
        expect(error.message, name).toMatch(/"edited"/);
      }
      await reader.close();
    }
    await putRaw(saver.dbName, "checkpoints", [row]);
    expect(await snapshot(newSaver(saver.dbName))).toEqual(before);
  });

  it("a key record of random bytes: every read fails closed with a package error", async () => {
    const saver = newSaver();
    await seeded(saver);
    await saver.close();
    await putRaw(saver.dbName, "meta", [{ name: "key", value: random(32) }]);
    const reader = newSaver(saver.dbName);
    const error = await rejection(reader.getTuple(cfg("good")));
    expect(error).toBeInstanceOf(DecryptionError);
    expect(error.message).toMatch(/encrypted/);
  });

  it("a key record edited to null, a number, a string, a list or an empty object: a DecryptionError from a plain and an encrypted saver, not a TypeError", async () => {
    const key = Uint8Array.from({ length: 32 }, (_, i) => i + 3);
    for (const encrypted of [false, true]) {
      const serde = encrypted ? await EncryptedSerializer.fromRawKey(key) : undefined;
      const saver = newSaver(undefined, { serde });
      await seeded(saver);
      await saver.close();
      for (const value of [null, 7, "aes-gcm", [1, 2], {}]) {
        await putRaw(saver.dbName, "meta", [{ name: "key", value }]);
        const reader = newSaver(saver.dbName, { serde });
        // Before: null was "TypeError: Cannot read properties of null (reading 'kind')" from every
        // operation; the others read as a key record "written by a "undefined" serializer".
        const error = await rejection(reader.getTuple(cfg("good")));
        const what = `${encrypted ? "encrypted" : "plain"}, ${JSON.stringify(value)}: ${error.message}`;
        expect(error, what).toBeInstanceOf(DecryptionError);
        expect(error.message, what).toMatch(encrypted ? /key record is malformed: it was altered/ : /encrypted/);
        await reader.close();
      }
    }
  });
});

describe("databases of other versions", () => {
  it('an empty "v0" database (a bare indexedDB.open(name) made it, version 1, no stores): a clear error naming the cause', async () => {
    const name = freshDbName("v0");
    names.add(name);
    (await openRaw(name)).close();
    const saver = newSaver(name);
    const error = await rejection(saver.getTuple(cfg("t")));
    expect(error).toBeInstanceOf(IndexedDBCheckpointError);
    expect(error.message).toMatch(/no object store/);
    expect(error.message).toContain(`IndexedDB database "${name}"`);
    expect(error.message).toMatch(/another dbName|delete it/i);
    expect((error as Error & { cause?: { name?: string } }).cause?.name).toBe("NotFoundError");
    // The database is left as it was.
    const db = await openRaw(name);
    expect([db.version, db.objectStoreNames.length]).toEqual([1, 0]);
    db.close();
  });

  it("a v1 database written by another saver instance opens with every row", async () => {
    const name = freshDbName("v1");
    const writer = newSaver(name);
    const before = await seeded(writer);
    await writer.close();
    const reader = newSaver(name);
    expect(await snapshot(reader)).toEqual(before);
    expect((await collect(reader.listThreads())).map((t) => [t.threadId, t.checkpointCount])).toEqual([["good", 3]]);
  });

  it("an upgrade step run on a database of the previous version keeps its data in place", async () => {
    const name = freshDbName("upgrade");
    const writer = newSaver(name);
    const before = await seeded(writer);
    await writer.close();
    const rowsBefore = await scanAll(name);
    // The next release: today's steps plus one (an index and a meta record).
    const next = new Database<SaverSchema>({
      name,
      upgrades: [
        ...SAVER_UPGRADES,
        (_db, tx) => {
          (
            tx.objectStore("checkpoints") as unknown as { createIndex(name: string, keyPath: string): unknown }
          ).createIndex("by_next", "created_at");
          void tx.objectStore("meta").put({ name: "upgraded_to", value: 2 });
        },
      ],
    });
    const upgraded = await next.read(
      ["meta", "checkpoints"],
      async (tx) => ({
        marker: (await tx.objectStore("meta").get("upgraded_to"))?.value,
        count: await tx.objectStore("checkpoints").count(),
      }),
      "read after the upgrade",
    );
    await next.close();
    expect(upgraded).toEqual({ marker: 2, count: 3 });
    const rowsAfter = await scanAll(name);
    expect(rowsAfter.checkpoints).toEqual(rowsBefore.checkpoints);
    expect(rowsAfter.blobs).toEqual(rowsBefore.blobs);
    expect(rowsAfter.writes).toEqual(rowsBefore.writes);
    // That release's saver reads everything.
    const newer = newSaver(name, { indexedDB: newerSchemaFactory() });
    expect(await snapshot(newer)).toEqual(before);
  });

  it("a database newer than the code: a clear error naming the cause, and the data untouched", async () => {
    const name = freshDbName("newer");
    const writer = newSaver(name);
    await seeded(writer);
    await writer.close();
    (await openRaw(name, 7, (db) => db.createObjectStore("from_the_future"))).close();
    const saver = newSaver(name);
    for (const call of [() => saver.getTuple(cfg("good")), () => saver.put(cfg("good"), checkpoint(), meta(), {})]) {
      const error = await rejection(call());
      expect(error).toBeInstanceOf(IndexedDBCheckpointError);
      expect(error.message).toMatch(/newer version/);
      expect(error.message).toContain(`open "${name}"`);
      expect((error as Error & { cause?: { name?: string } }).cause?.name).toBe("VersionError");
    }
    const db = await openRaw(name);
    expect(db.version).toBe(7);
    db.close();
    expect(rowsOfThread(await scanAll(name), "good").checkpoints).toHaveLength(3);
  });
});

describe("IndexedDB unavailable", () => {
  const calls = (saver: IndexedDBSaver): [string, () => Promise<unknown> | AsyncIterable<unknown>][] => [
    ["getTuple", () => saver.getTuple(cfg("t"))],
    ["put", () => saver.put(cfg("t"), checkpoint(), meta(), {})],
    ["putWrites", () => saver.putWrites(cfg("t", "", uuid6(0)), [["a", 1]], "task")],
    ["list", () => saver.list({ configurable: {} })],
    ["listThreads", () => saver.listThreads()],
    ["deleteThread", () => saver.deleteThread("t")],
  ];

  it("no global indexedDB and none passed: IndexedDBUnavailableError saying what to do, from every method, never from the constructor", async () => {
    vi.stubGlobal("indexedDB", undefined);
    const saver = new IndexedDBSaver({ dbName: freshDbName("none"), indexedDB: undefined });
    for (const [what, call] of calls(saver)) {
      const error = await rejection(call() as Promise<unknown>);
      expect(error, what).toBeInstanceOf(IndexedDBUnavailableError);
      expect(error.message, what).toMatch(/not available/);
      expect(error.message, what).toMatch(/indexedDB/);
    }
    await saver.close();
  });

  it("a factory passed where IndexedDB's classes are not globals (Node without fake-indexeddb/auto): IndexedDBUnavailableError saying what to import, no open started", async () => {
    // What a Node app that passes `indexedDB: new IDBFactory()` from "fake-indexeddb" has: a factory, and no
    // IDBRequest, IDBKeyRange, … globals, which idb's `instanceof IDBRequest` reads (a bare ReferenceError before).
    const factory = globalThis.indexedDB;
    const opens = vi.spyOn(factory, "open");
    for (const name of [
      "IDBRequest",
      "IDBKeyRange",
      "IDBDatabase",
      "IDBTransaction",
      "IDBObjectStore",
      "IDBIndex",
      "IDBCursor",
    ]) {
      vi.stubGlobal(name, undefined);
    }
    const saver = new IndexedDBSaver({ dbName: freshDbName("no-globals"), indexedDB: factory });
    for (const [what, call] of calls(saver)) {
      const error = await rejection(call() as Promise<unknown>);
      expect(error, what).toBeInstanceOf(IndexedDBUnavailableError);
      expect(error.message, what).toContain("IDBRequest");
      expect(error.message, what).toContain('import "fake-indexeddb/auto"');
    }
    expect(opens).not.toHaveBeenCalled();
    opens.mockRestore();
    await saver.close();
  });

  it("a factory whose open throws (Firefox private mode): IndexedDBUnavailableError with the browser's error as cause", async () => {
    const saver = new IndexedDBSaver({ dbName: freshDbName("throws"), indexedDB: throwingFactory() });
    for (const [what, call] of calls(saver)) {
      const error = await rejection(call() as Promise<unknown>);
      expect(error, what).toBeInstanceOf(IndexedDBUnavailableError);
      expect(error.message, what).toMatch(/refused to open/);
      expect(error.message, what).toMatch(/did not allow mutations/);
      expect((error as Error & { cause?: { name?: string } }).cause?.name, what).toBe("InvalidStateError");
    }
    await saver.close();
  });

  it("a factory whose open request fails: IndexedDBUnavailableError naming the browser's error", async () => {
    const saver = new IndexedDBSaver({ dbName: freshDbName("fails"), indexedDB: failingFactory() });
    for (const [what, call] of calls(saver)) {
      const error = await rejection(call() as Promise<unknown>);
      expect(error, what).toBeInstanceOf(IndexedDBUnavailableError);
      expect(error.message, what).toMatch(/could not open/);
      expect(error.message, what).toContain(`"${saver.dbName}": InvalidStateError`);
    }
    await saver.close();
  });
});
