/**
 * Thread export, import and copy between savers (Node on fake-indexeddb, and
 * Chromium): the file format, its validation (a bad file never writes), the
 * progress callback, and a thread with a subgraph, interrupts, pending writes
 * and a delta channel moved to another saver and continued there.
 */
import { DeltaValue, END, MemorySaver, NodeInterrupt, START, StateGraph, StateSchema } from "@langchain/langgraph/web";
import { z } from "zod";
import {
  emptyCheckpoint,
  type BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointMetadata,
  type ChannelVersions,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it } from "vitest";
import { MsgpackSerializer } from "../serde/msgpack/index.js";
import {
  THREAD_EXPORT_MEDIA_TYPE,
  ThreadExportError,
  ThreadFileError,
  ThreadImportError,
  copyThreads,
  exportThread,
  exportThreadStream,
  importThread,
  readThreadExportHeader,
  validateThreadExport,
  type ThreadTransferProgress,
} from "./index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { chat, chatGraph, plain as plainMessages } from "../../test/support/chat-graph.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { Scenario, fanOutGraph, rawThread, stateView } from "../../test/support/portable-scenario.js";
import { crc32 } from "../core/crc32.js";
import { FORMAT_INTERNALS } from "./format.js";

const opened: IndexedDBSaver[] = [];

/** A saver on a fresh database, closed and deleted after the test. */
function idbSaver(params: { serde?: MsgpackSerializer } = {}): IndexedDBSaver {
  const saver = new IndexedDBSaver({ dbName: freshDbName("portable"), ...params });
  opened.push(saver);
  return saver;
}

afterEach(async () => {
  const names = new Set(opened.map((saver) => saver.dbName));
  await Promise.all(opened.splice(0).map((saver) => saver.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
});

const { SIGNATURE, KIND, FRAME_HEAD } = FORMAT_INTERNALS;

/** Frames of a file: kind letter and payload. */
function framesOf(bytes: Uint8Array): { kind: string; payload: Uint8Array; start: number }[] {
  const frames = [];
  for (let offset = SIGNATURE.length; offset < bytes.length;) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
    frames.push({
      kind: String.fromCharCode(bytes[offset]!),
      payload: bytes.subarray(offset + FRAME_HEAD, offset + FRAME_HEAD + length),
      start: offset,
    });
    offset += FRAME_HEAD + length;
  }
  return frames;
}

/** A file built by hand: signature, frames, and a trailer with a correct CRC. */
function buildFile(frames: { kind: number; payload: Uint8Array }[], trailer: Record<string, unknown>): Uint8Array {
  const parts: Uint8Array[] = [SIGNATURE];
  const frameBytes = (kind: number, payload: Uint8Array) => {
    const out = new Uint8Array(FRAME_HEAD + payload.length);
    out[0] = kind;
    new DataView(out.buffer).setUint32(1, payload.length);
    out.set(payload, FRAME_HEAD);
    return out;
  };
  for (const f of frames) parts.push(frameBytes(f.kind, f.payload));
  const body = join(parts);
  const crc = crc32(0, body).toString(16).padStart(8, "0");
  return join([body, frameBytes(KIND.END, new TextEncoder().encode(JSON.stringify({ ...trailer, crc32: crc })))]);
}

function join(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** The JSON of a frame's payload. */
function json(payload: Uint8Array): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
}

/** A file with one frame's bytes rewritten, its CRC fixed again. */
function rewrite(bytes: Uint8Array, edit: (frames: { kind: number; payload: Uint8Array }[]) => void): Uint8Array {
  const frames = framesOf(bytes).map((f) => ({ kind: f.kind.charCodeAt(0), payload: f.payload }));
  const end = json(frames.pop()!.payload);
  edit(frames);
  return buildFile(frames, end);
}

/** A thread of three chat turns on MessagesDeltaValue. */
async function chatThread(saver: BaseCheckpointSaver, threadId = "chat") {
  await chat(saver, threadId, ["one", "two", "three"], true);
  return threadId;
}

/** `put` through the base signature (MemorySaver's own omits `newVersions`). */
function put(
  saver: BaseCheckpointSaver,
  config: RunnableConfig,
  checkpoint: Checkpoint,
  metadata: Partial<CheckpointMetadata>,
  versions: ChannelVersions,
) {
  return saver.put(config, checkpoint, metadata as CheckpointMetadata, versions);
}

async function listCount(saver: BaseCheckpointSaver, threadId: string): Promise<number> {
  let n = 0;
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) n += tuple ? 1 : 0;
  return n;
}

describe("the export format", () => {
  it("computes zlib's CRC-32", () => {
    expect(crc32(0, new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
    const bytes = new TextEncoder().encode("123456789");
    expect(crc32(crc32(0, bytes.subarray(0, 4)), bytes.subarray(4))).toBe(0xcbf43926);
  });

  it("writes a signature, a JSON header, blob and checkpoint records and a checked trailer", async () => {
    const saver = idbSaver();
    const threadId = await chatThread(saver);
    const bytes = await exportThread(saver, threadId, { as: "bytes" });
    expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x4c, 0x47, 0x54, 0x0d, 0x0a, 0x1a, 0x0a]);
    const frames = framesOf(bytes);
    expect(frames[0]!.kind).toBe("H");
    expect(frames.at(-1)!.kind).toBe("E");
    const header = json(frames[0]!.payload);
    const total = await listCount(saver, threadId);
    expect(header).toMatchObject({
      format: "langgraph-thread",
      version: 1,
      threadId,
      source: "IndexedDBSaver",
      serde: "msgpack",
      namespaces: [""],
      generator: "langgraph-checkpoint-indexeddb",
      counts: { checkpoints: total },
    });
    expect(await readThreadExportHeader(bytes)).toEqual(header);
    const kinds = frames.slice(1, -1).map((f) => f.kind);
    expect(kinds.filter((k) => k === "C")).toHaveLength(total);
    expect(kinds.filter((k) => k === "B")).toHaveLength((header.counts as { blobs: number }).blobs);
    // Every blob comes before the first checkpoint that uses it: the first record is a blob or a checkpoint without values.
    const trailer = json(frames.at(-1)!.payload);
    expect(trailer).toEqual({
      ...(header.counts as object),
      crc32: crc32(0, bytes.subarray(0, frames.at(-1)!.start))
        .toString(16)
        .padStart(8, "0"),
    });

    const blob = await exportThread(saver, threadId);
    expect(blob).toBeInstanceOf(Blob);
    expect(blob.type).toBe(THREAD_EXPORT_MEDIA_TYPE);
    expect(await readThreadExportHeader(blob)).toMatchObject({ threadId, counts: header.counts });
  });

  it("stores each channel version once, however many checkpoints share it", async () => {
    const saver = new MemorySaver();
    const config: RunnableConfig = { configurable: { thread_id: "shared", checkpoint_ns: "" } };
    let parent = config;
    const big = "x".repeat(10_000);
    for (let step = 0; step < 5; step++) {
      const checkpoint: Checkpoint = {
        ...emptyCheckpoint(),
        id: `0000000${step}`,
        channel_values: { document: big, step },
        channel_versions: { document: 1, step: step + 1 },
      };
      parent = await put(saver, parent, checkpoint, { source: "loop", step, parents: {} }, { step: step + 1 });
    }
    const bytes = await exportThread(saver, "shared", { as: "bytes" });
    expect(await readThreadExportHeader(bytes)).toMatchObject({
      source: "MemorySaver",
      counts: { checkpoints: 5, blobs: 6, writes: 0 },
    });
    expect(bytes.length).toBeLessThan(2 * big.length);
    const target = new MemorySaver();
    await importThread(target, bytes);
    expect(await rawThread(target, "shared")).toEqual(await rawThread(saver, "shared"));
  });

  it("keeps two values that share a version on different branches apart", async () => {
    // Integer versions collide on forks in savers that store whole checkpoints.
    const saver = new MemorySaver();
    const root = await put(
      saver,
      { configurable: { thread_id: "fork", checkpoint_ns: "" } },
      { ...emptyCheckpoint(), id: "1", channel_values: { v: "root" }, channel_versions: { v: 1 } },
      { source: "loop", step: 0, parents: {} },
      { v: 1 },
    );
    await put(
      saver,
      root,
      { ...emptyCheckpoint(), id: "2", channel_values: { v: "left" }, channel_versions: { v: 2 } },
      { source: "loop", step: 1, parents: {} },
      { v: 2 },
    );
    await put(
      saver,
      root,
      { ...emptyCheckpoint(), id: "3", channel_values: { v: "right" }, channel_versions: { v: 2 } },
      { source: "fork", step: 1, parents: {} },
      { v: 2 },
    );
    const file = await exportThread(saver, "fork", { as: "bytes" });
    // IndexedDBSaver keeps one value per version: the second branch's value gets
    // a version of its own, between 2 and the next one (3), for every target.
    for (const target of [new MemorySaver(), idbSaver()]) {
      await importThread(target, file);
      const rows = await rawThread(target, "fork");
      const byId = (id: string) => rows.find((row) => row.id === id)!.checkpoint as Checkpoint;
      expect(["1", "2", "3"].map((id) => byId(id).channel_values.v)).toEqual(["root", "left", "right"]);
      expect([byId("1").channel_versions.v, byId("2").channel_versions.v]).toEqual([1, 2]);
      expect(byId("3").channel_versions.v).toBeGreaterThan(2);
      expect(byId("3").channel_versions.v).toBeLessThan(3);
      const source = (await rawThread(saver, "fork")).find((row) => row.id === "3")!.checkpoint as Checkpoint;
      expect({ ...byId("3"), channel_versions: {} }).toEqual({ ...source, channel_versions: {} });
    }
  });
});

describe("exportThread and importThread", () => {
  it("round-trips every checkpoint, value, parent link and pending write (IndexedDB and MemorySaver targets)", async () => {
    const scenario = new Scenario();
    const source = idbSaver();
    await scenario.untilInterrupted(source, "t");
    const file = await exportThread(source, "t");
    const header = await readThreadExportHeader(file);
    expect(header.namespaces.length).toBeGreaterThan(1);

    const expected = await rawThread(source, "t");
    expect(JSON.stringify(expected)).toContain("$deltaSnapshot");
    for (const target of [idbSaver(), new MemorySaver()]) {
      const result = await importThread(target, file);
      expect(result).toMatchObject({ threadId: "t", checkpoints: expected.length, header });
      expect(await rawThread(target, "t")).toEqual(expected);
      expect(await scenario.view(target, "t")).toEqual(await scenario.view(source, "t"));
    }
  });

  it("moves a thread with a subgraph, interrupts, pending writes and MessagesDeltaValue, and continues it there", async () => {
    const scenario = new Scenario();
    const source = idbSaver();
    await scenario.untilInterrupted(source, "moved");
    const paused = await scenario.view(source, "moved");
    expect(paused.state.next).toEqual(["research"]);
    const tasks = paused.state.tasks as { name: string; interrupts: unknown[]; result?: unknown }[];
    expect(tasks.find((t) => t.name === "research")?.interrupts).toEqual([
      { value: { question: "publish the draft?" } },
    ]);
    expect(tasks.find((t) => t.name === "side")?.result).toEqual({ notes: ["side 5"], log: ["side 4"] });

    for (const makeTarget of [() => new MemorySaver(), () => idbSaver()]) {
      const target = makeTarget();
      await copyThreads(source, target, { threadIds: ["moved"] });
      expect(await scenario.view(target, "moved")).toEqual(paused);
      await scenario.continueRun(target, "moved");
      const done = await scenario.view(target, "moved");
      expect((done.state.values as { messages: { content: string }[] }).messages.map((m) => m.content)).toEqual([
        "hello",
        "echo hello (#1)",
        "done: drafted, approved (gate); side 2",
        "again",
        "echo again (#4)",
        "done: drafted, approved (gate); side 2, side 5",
        "one more",
        "echo one more (#7)",
        "done: drafted, approved (gate); side 2, side 5, side 8",
      ]);
    }
    // The same continuation on the source gives the same state and history.
    const target = idbSaver();
    await importThread(target, await exportThread(source, "moved"));
    await scenario.continueRun(source, "moved");
    await scenario.continueRun(target, "moved");
    expect(await scenario.shape(target, "moved")).toEqual(await scenario.shape(source, "moved"));
  });

  it("moves pending Sends and runs them on the other side", async () => {
    const source = idbSaver();
    const config = { configurable: { thread_id: "fan" } };
    await fanOutGraph(source).invoke({ topics: ["ducks", "owls", "bees"] }, config);
    const paused = await fanOutGraph(source).getState(config);
    expect(paused.next).toEqual(["research", "research", "research"]);
    const file = await exportThread(source, "fan");
    for (const target of [new MemorySaver(), idbSaver()]) {
      await importThread(target, file);
      expect(await rawThread(target, "fan")).toEqual(await rawThread(source, "fan"));
      expect(stateView(await fanOutGraph(target).getState(config))).toEqual(stateView(paused));
      await fanOutGraph(target).invoke(null, config);
      expect([...(await fanOutGraph(target).getState(config)).values.results].sort()).toEqual([
        "notes on bees",
        "notes on ducks",
        "notes on owls",
      ]);
    }
  });

  it("imports under targetThreadId, rewriting every thread id", async () => {
    const source = idbSaver();
    await chatThread(source, "original");
    const target = idbSaver();
    await importThread(target, await exportThread(source, "original"), { targetThreadId: "renamed" });
    expect(await listCount(target, "original")).toBe(0);
    const rows = await rawThread(target, "renamed");
    expect(
      rows.every((row) => row.thread === "renamed" && (row.parent === undefined || row.parentThread === "renamed")),
    ).toBe(true);
    const strip = (r: Awaited<ReturnType<typeof rawThread>>) => r.map(({ thread, parentThread, ...rest }) => rest);
    expect(strip(rows)).toEqual(strip(await rawThread(source, "original")));
    const next = await chat(target, "renamed", ["four"], true);
    expect(next.map(([, text]) => text)).toEqual([
      "one",
      "echo one (#1)",
      "two",
      "echo two (#3)",
      "three",
      "echo three (#5)",
      "four",
      "echo four (#7)",
    ]);
  });

  it("reports progress from 0 to the total, on export and import", async () => {
    const source = idbSaver();
    await chatThread(source);
    const total = await listCount(source, "chat");
    const exported: ThreadTransferProgress[] = [];
    const file = await exportThread(source, "chat", { onProgress: (p) => exported.push({ ...p }) });
    const imported: ThreadTransferProgress[] = [];
    await importThread(idbSaver(), file, { onProgress: (p) => imported.push({ ...p }) });
    const expected = Array.from({ length: total + 1 }, (_, checkpoints) => ({ checkpoints, total }));
    expect(exported).toEqual(expected);
    expect(imported).toEqual(expected);
  });

  it("streams the file chunk by chunk", async () => {
    const source = idbSaver();
    await chatThread(source);
    const total = await listCount(source, "chat");
    const reader = exportThreadStream(source, "chat").getReader();
    const chunks: Uint8Array[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
    expect(chunks).toHaveLength(total + 2);
    const target = idbSaver();
    await importThread(target, new Blob(chunks as BlobPart[]));
    expect(await rawThread(target, "chat")).toEqual(await rawThread(source, "chat"));
    // A stream is accepted as input too.
    const again = new MemorySaver();
    await importThread(again, exportThreadStream(source, "chat"));
    expect(
      plainMessages((await chatGraph(again, true).getState({ configurable: { thread_id: "chat" } })).values.messages),
    ).toHaveLength(6);
  });

  it("refuses to export a thread without checkpoints", async () => {
    await expect(exportThread(idbSaver(), "nobody")).rejects.toThrow(ThreadExportError);
    await expect(exportThread(idbSaver(), "nobody")).rejects.toThrow(/no checkpoints/);
  });
});

describe("a bad file writes nothing", () => {
  async function goodFile() {
    const source = idbSaver();
    await chatThread(source, "good");
    return exportThread(source, "good", { as: "bytes" });
  }

  /** Imports into a saver holding another thread; checks the error and that nothing changed. */
  async function expectRejected(
    file: Uint8Array | Blob,
    pattern: RegExp,
    options: Parameters<typeof importThread>[2] = {},
  ) {
    const target = idbSaver();
    await chatThread(target, "bystander");
    const before = await rawThread(target, "bystander");
    const error = await importThread(target, file, options).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ThreadFileError);
    expect((error as Error).message).toMatch(pattern);
    expect(await listCount(target, options.targetThreadId ?? "good")).toBe(0);
    expect(await rawThread(target, "bystander")).toEqual(before);
  }

  it("rejects JSON, empty and unrelated files", async () => {
    const text = (s: string) => new TextEncoder().encode(s);
    await expectRejected(
      text(JSON.stringify({ format: "langgraph-thread", version: 1 })),
      /Not a langgraph-thread file \(it looks like JSON\)/,
    );
    await expectRejected(new Uint8Array(0), /\(it is empty\)/);
    await expectRejected(text("PK\u0003\u0004 a zip file"), /does not start with the format's signature/);
    await expect(validateThreadExport(new Uint8Array(0))).rejects.toThrow(ThreadFileError);
  });

  it("rejects another format and a newer version, naming them", async () => {
    const file = await goodFile();
    const withHeader = (change: Record<string, unknown>) =>
      rewrite(file, (frames) => {
        frames[0]!.payload = new TextEncoder().encode(JSON.stringify({ ...json(frames[0]!.payload), ...change }));
      });
    await expectRejected(withHeader({ format: "langgraph-store" }), /format "langgraph-store", not "langgraph-thread"/);
    await expectRejected(
      withHeader({ version: 3 }),
      /format version 3.*reads up to 2.*Update langgraph-checkpoint-indexeddb/,
    );
    await expect(readThreadExportHeader(withHeader({ version: 3 }))).rejects.toThrow(/version 3/);
    await expectRejected(
      withHeader({ counts: { checkpoints: 1, blobs: 0, writes: 0 } }),
      /announces 1 checkpoints but holds/,
    );
    await expectRejected(
      rewrite(file, (frames) => frames.splice(2, 0, { kind: "X".charCodeAt(0), payload: new Uint8Array(3) })),
      /record of kind "X" that this version cannot read/,
    );
    // Lower-case (ancillary) kinds are skipped.
    const target = idbSaver();
    await importThread(
      target,
      rewrite(file, (frames) => frames.splice(2, 0, { kind: "x".charCodeAt(0), payload: new Uint8Array(3) })),
    );
    expect(await listCount(target, "good")).toBeGreaterThan(0);
  });

  it("rejects corrupt and truncated files", async () => {
    const file = await goodFile();
    const flipped = file.slice();
    flipped[Math.floor(file.length / 2)]! ^= 0x20;
    await expectRejected(flipped, /corrupt: its checksum/);
    await expectRejected(file.slice(0, file.length - 10), /truncated/);
    await expectRejected(
      file.slice(
        0,
        file.length - (json(framesOf(file).at(-1)!.payload) ? framesOf(file).at(-1)!.payload.length + FRAME_HEAD : 0),
      ),
      /end record is missing/,
    );
    await expectRejected(new Blob([file.slice(0, 5)]), /truncated/);
    // Cut right after its signature: a download that stopped, not a file of another kind.
    await expectRejected(file.slice(0, SIGNATURE.length), /truncated: it ends after its signature/);
    await expect(validateThreadExport(file.slice(0, SIGNATURE.length))).rejects.toThrow(/truncated/);
    // A checkpoint record that refers to a blob nobody wrote (valid CRC).
    const missingBlob = rewrite(file, (frames) => {
      const at = frames.findIndex((f) => f.kind === KIND.BLOB);
      frames.splice(at, 1);
    });
    await expectRejected(missingBlob, /record \d+ refers to a value of channel "[^"]+" that no earlier record holds/);
  });

  it("rejects a record the serializer cannot decode before writing anything, and reads it with the right serializer", async () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    const serde = new MsgpackSerializer({ types: [Point] });
    const source = idbSaver({ serde });
    const config: RunnableConfig = { configurable: { thread_id: "good", checkpoint_ns: "" } };
    const versions: ChannelVersions = { plain: 1, point: 1 };
    const first = await source.put(
      config,
      {
        ...emptyCheckpoint(),
        id: "1",
        channel_values: { plain: "fine", point: "none yet" },
        channel_versions: versions,
      },
      { source: "input", step: -1, parents: {} } as CheckpointMetadata,
      versions,
    );
    await source.put(
      first,
      {
        ...emptyCheckpoint(),
        id: "2",
        channel_values: { plain: "fine", point: new Point(1, 2) },
        channel_versions: { plain: 1, point: 2 },
      },
      { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
      { point: 2 },
    );
    const file = await exportThread(source, "good", { serde, as: "bytes" });
    await expectRejected(file, /cannot be decoded as "msgpack".*pass a MsgpackSerializer listing them/);
    const target = idbSaver({ serde });
    await importThread(target, file, { serde });
    const tuple = await target.getTuple({ configurable: { thread_id: "good", checkpoint_ns: "" } });
    expect(tuple?.checkpoint.channel_values.point).toBeInstanceOf(Point);
    expect(tuple?.checkpoint.channel_values.point).toEqual(new Point(1, 2));
  });

  it("refuses a thread that exists unless told to replace or merge", async () => {
    const file = await goodFile();
    const target = idbSaver();
    await chatThread(target, "good");
    await chat(target, "good", ["local"], true);
    const before = await rawThread(target, "good");
    await expect(importThread(target, file)).rejects.toThrow(/already has checkpoints/);
    expect(await rawThread(target, "good")).toEqual(before);
    await importThread(target, file, { ifExists: "replace" });
    const fresh = idbSaver();
    await importThread(fresh, file);
    expect(await rawThread(target, "good")).toEqual(await rawThread(fresh, "good"));
    await expect(importThread(target, file, { ifExists: "merge" })).resolves.toMatchObject({ threadId: "good" });
  });

  it("never reports success for a thread the target saver silently dropped", async () => {
    // A pruned thread: its oldest checkpoint's parent is gone.
    const source = new MemorySaver();
    let config: RunnableConfig = { configurable: { thread_id: "pruned", checkpoint_ns: "", checkpoint_id: "3" } };
    for (const id of ["5", "6"]) {
      config = await put(
        source,
        config,
        { ...emptyCheckpoint(), id, channel_values: { v: id }, channel_versions: { v: Number(id) } },
        { source: "loop", step: Number(id), parents: {} },
        { v: Number(id) },
      );
    }
    const file = await exportThread(source, "pruned", { as: "bytes" });
    // The target once had this thread (ids up to "9") and deleted it: IndexedDBSaver keeps a tombstone.
    const target = idbSaver();
    let old: RunnableConfig = { configurable: { thread_id: "pruned", checkpoint_ns: "" } };
    for (const id of ["1", "3", "9"]) {
      old = await put(
        target,
        old,
        { ...emptyCheckpoint(), id, channel_values: {}, channel_versions: {} },
        { source: "loop", step: Number(id), parents: {} },
        {},
      );
    }
    await target.deleteThread("pruned");
    const outcome = await importThread(target, file).then(
      () => "imported",
      (error: unknown) => error,
    );
    if (outcome === "imported") {
      expect(await rawThread(target, "pruned")).toEqual(await rawThread(source, "pruned"));
    } else {
      expect(outcome).toBeInstanceOf(ThreadImportError);
      expect((outcome as Error).message).toMatch(/did not keep checkpoint 6/);
      expect(await listCount(target, "pruned")).toBe(0);
    }
  });

  it("deletes what it wrote when the target saver fails midway", async () => {
    const file = await goodFile();
    class FlakySaver extends MemorySaver {
      puts = 0;
      override async put(...args: Parameters<MemorySaver["put"]>) {
        this.puts += 1;
        if (this.puts === 3) throw new Error("disk full");
        return super.put(...args);
      }
    }
    const target = new FlakySaver();
    const error = (await importThread(target, file).catch((e: unknown) => e)) as ThreadImportError;
    expect(error).toBeInstanceOf(ThreadImportError);
    expect(error.message).toMatch(
      /failed after 2 of \d+ checkpoints: disk full\. The partly imported thread was deleted again/,
    );
    expect(error).toMatchObject({ threadId: "good", written: 2, rolledBack: true });
    expect(await listCount(target, "good")).toBe(0);
  });

  it("a replace that fails or is stopped midway puts back the thread it replaced", async () => {
    const file = await goodFile();
    for (const target of [idbSaver(), new MemorySaver()]) {
      await chat(target, "good", ["my local conversation"], true);
      const before = await rawThread(target, "good");
      // Stopped by the user after the first checkpoint.
      const controller = new AbortController();
      const onProgress = ({ checkpoints }: ThreadTransferProgress) => checkpoints === 1 && controller.abort();
      const stopped = await importThread(target, file, {
        ifExists: "replace",
        signal: controller.signal,
        onProgress,
      }).then(
        () => undefined,
        (e: unknown) => e as ThreadImportError,
      );
      expect(stopped).toMatchObject({ threadId: "good", written: 1, rolledBack: true, restored: true });
      expect(stopped!.message).toMatch(
        /failed after 1 of \d+ checkpoints: .*aborted.*The thread it replaced was put back as it was/,
      );
      expect(await rawThread(target, "good")).toEqual(before);
    }
    // A write failing (a full disk) in the middle.
    class FlakySaver extends MemorySaver {
      failAt = Infinity;
      override async put(...args: Parameters<MemorySaver["put"]>) {
        if (--this.failAt === 0) throw new Error("disk full");
        return super.put(...args);
      }
    }
    const target = new FlakySaver();
    await chat(target, "good", ["my local conversation"], true);
    const before = await rawThread(target, "good");
    target.failAt = 3;
    const failed = await importThread(target, file, { ifExists: "replace" }).catch((e: unknown) => e);
    expect(failed).toMatchObject({
      written: 2,
      rolledBack: true,
      restored: true,
      message: expect.stringMatching(/disk full/),
    });
    expect(await rawThread(target, "good")).toEqual(before);
  });

  it("a replace whose put-back fails too keeps the copy of the replaced thread on the error", async () => {
    const file = await goodFile();
    class BrokenSaver extends MemorySaver {
      failFrom = Infinity;
      override async put(...args: Parameters<MemorySaver["put"]>) {
        if (--this.failFrom <= 0) throw new Error("disk full");
        return super.put(...args);
      }
    }
    const target = new BrokenSaver();
    await chat(target, "good", ["my local conversation"], true);
    const before = await rawThread(target, "good");
    target.failFrom = 3; // the import's third put fails, and every put after it: the put-back too
    const failed = (await importThread(target, file, { ifExists: "replace" }).catch(
      (e: unknown) => e,
    )) as ThreadImportError;
    expect(failed).toMatchObject({ rolledBack: true, restored: false });
    expect(failed.message).toMatch(
      /Putting back the thread it replaced failed \(.*disk full.*\)\. Its copy is the error's `replaced`/,
    );
    expect(await listCount(target, "good")).toBe(0);
    // Once the disk has room again, the copy brings the thread back as it was.
    target.failFrom = Infinity;
    await importThread(target, failed.replaced!);
    expect(await rawThread(target, "good")).toEqual(before);
  });

  it("a replace stopped while it copies the thread it replaces deletes nothing", async () => {
    const file = await goodFile();
    const controller = new AbortController();
    // The user stops the import while the copy is read (a large thread takes a while).
    class WatchedSaver extends MemorySaver {
      copying = false;
      deletes = 0;
      override async getTuple(...args: Parameters<MemorySaver["getTuple"]>) {
        if (this.copying) controller.abort();
        return super.getTuple(...args);
      }
      override async deleteThread(threadId: string) {
        this.deletes += 1;
        return super.deleteThread(threadId);
      }
    }
    const target = new WatchedSaver();
    await chat(target, "good", ["my local conversation"], true);
    const before = await rawThread(target, "good");
    target.copying = true;
    const error = await importThread(target, file, { ifExists: "replace", signal: controller.signal }).catch(
      (e: unknown) => e as Error,
    );
    target.copying = false;
    expect((error as Error).name).toBe("AbortError");
    expect(target.deletes).toBe(0);
    expect(await rawThread(target, "good")).toEqual(before);
  });

  it("a replace whose copy meets another writer refuses before deleting anything", async () => {
    const file = await goodFile();
    // Another tab's run writes to the thread while the import copies it: the copy fails as changed.
    class RacedSaver extends MemorySaver {
      racing = false;
      override async getTuple(...args: Parameters<MemorySaver["getTuple"]>) {
        if (this.racing) {
          this.racing = false;
          const latest = await super.getTuple({ configurable: { thread_id: "good", checkpoint_ns: "" } });
          await this.putWrites(latest!.config, [["messages", "from another tab"]], "other-tab-task");
        }
        return super.getTuple(...args);
      }
    }
    const target = new RacedSaver();
    await chat(target, "good", ["my local conversation"], true);
    target.racing = true;
    const controller = new AbortController();
    const error = await importThread(target, file, {
      ifExists: "replace",
      signal: controller.signal,
      onProgress: ({ checkpoints }) => checkpoints === 1 && controller.abort(),
    }).catch((e: unknown) => e as ThreadImportError);
    expect(error).toBeInstanceOf(ThreadImportError);
    expect(error).toMatchObject({ written: 0, rolledBack: false, restored: false });
    expect((error as Error).message).toMatch(/changed while .* copied .* Nothing was changed/);
    // The thread is as the other tab left it, its write included.
    const after = await target.getTuple({ configurable: { thread_id: "good", checkpoint_ns: "" } });
    expect(after?.pendingWrites).toContainEqual(["other-tab-task", "messages", "from another tab"]);
    const state = await chatGraph(target, true).getState({ configurable: { thread_id: "good" } });
    expect(plainMessages(state.values.messages)).toContainEqual(["human", "my local conversation"]);
  });
});

describe("pending writes keep their order", () => {
  it("restores a source order that is not task-id order, so delta replays stay the same", async () => {
    const source = new MemorySaver();
    const config = await put(
      source,
      { configurable: { thread_id: "order", checkpoint_ns: "" } },
      { ...emptyCheckpoint(), id: "1" },
      { source: "loop", step: 0, parents: {} },
      {},
    );
    // Task paths order them b, a (as live execution would apply them).
    await source.putWrites(config, [["log", "from b"]], "task-b", "~1");
    await source.putWrites(
      config,
      [
        ["log", "from a"],
        ["__interrupt__", { value: "stop" }],
        ["log", "again a"],
      ],
      "task-a",
      "~2",
    );
    await source.putWrites(config, [["log", "input"]], "00000000-0000-0000-0000-000000000000", "");
    const expected = (await source.getTuple(config))!.pendingWrites;
    expect(expected!.map(([task]) => task)).toEqual([
      "00000000-0000-0000-0000-000000000000",
      "task-b",
      "task-a",
      "task-a",
      "task-a",
    ]);
    const file = await exportThread(source, "order", { as: "bytes" });
    for (const target of [new MemorySaver(), idbSaver()]) {
      await importThread(target, file);
      const tuple = await target.getTuple({
        configurable: { thread_id: "order", checkpoint_ns: "", checkpoint_id: "1" },
      });
      expect(tuple!.pendingWrites!.map(([task, channel]) => [task, channel])).toEqual(
        expected!.map(([task, channel]) => [task, channel]),
      );
    }
  });
});

/**
 * `alpha` and `beta` run in one step, each appending its name to a delta
 * channel; `alpha` stops (a `NodeInterrupt`) until `gate.open`.
 */
function parallelLogGraph(saver: BaseCheckpointSaver, gate: { open: boolean }) {
  const State = new StateSchema({
    log: new DeltaValue(
      z.array(z.string()).default(() => []),
      {
        reducer: (state: string[], writes: string[][]) => state.concat(...writes),
      },
    ),
  });
  const node = (name: string) => () => {
    if (name === "alpha" && !gate.open) throw new NodeInterrupt("wait");
    return { log: [name] };
  };
  return new StateGraph(State)
    .addNode("alpha", node("alpha"))
    .addNode("beta", node("beta"))
    .addEdge(START, "alpha")
    .addEdge(START, "beta")
    .addEdge("alpha", END)
    .addEdge("beta", END)
    .compile({ checkpointer: saver });
}

describe("pending writes keep their task paths", () => {
  it("a run resumed after the import rebuilds a delta channel as on the source", async () => {
    // beta's write waits while alpha is interrupted; alpha's writes, added on resume, carry its path
    // ("~__pregel_pull, alpha"), which sorts before beta's. Without the paths, an import whose tasks
    // are in task-id order stored beta's write under "", before alpha's: the log read ["beta", "alpha"].
    const config = { configurable: { thread_id: "" } };
    const source = idbSaver();
    const gate = { open: false };
    for (let attempt = 0; ; attempt++) {
      expect(attempt).toBeLessThan(32);
      config.configurable.thread_id = `t${attempt}`;
      await parallelLogGraph(source, gate).invoke({ log: ["start"] }, config);
      const [alpha, beta] = (await source.getTuple(config))!.pendingWrites!.map(([taskId]) => taskId);
      if (alpha! < beta!) break;
    }
    const file = await exportThread(source, config.configurable.thread_id);
    gate.open = true;
    await parallelLogGraph(source, gate).invoke(null, config);
    const expected = (await parallelLogGraph(source, gate).getState(config)).values.log;
    expect(expected).toEqual(["start", "alpha", "beta"]);
    for (const target of [idbSaver(), new MemorySaver()]) {
      await importThread(target, file);
      await parallelLogGraph(target, gate).invoke(null, config);
      expect((await parallelLogGraph(target, gate).getState(config)).values.log).toEqual(expected);
    }
  });

  it("come back as stored, from IndexedDBSaver and from MemorySaver, so later writes sort among them", async () => {
    const writesOf = async (saver: BaseCheckpointSaver) =>
      (await saver.getTuple(at))!.pendingWrites!.map(([taskId, channel, value]) => [taskId, channel, value]);
    const at = { configurable: { thread_id: "paths", checkpoint_ns: "", checkpoint_id: "1" } };
    const source = idbSaver();
    const root = { configurable: { thread_id: "paths", checkpoint_ns: "" } };
    await put(source, root, { ...emptyCheckpoint(), id: "1" }, { source: "loop", step: 0, parents: {} }, {});
    await source.putWrites(at, [["log", "b"]], "task-b", "~__pregel_pull, b");
    await source.putWrites(at, [["__interrupt__", { value: "stop" }]], "task-a", "~__pregel_pull, a");
    const memory = new MemorySaver();
    await importThread(memory, await exportThread(source, "paths"));
    const back = idbSaver();
    await importThread(back, await exportThread(memory, "paths"));
    // A resumed task adds its writes with its own path: they sort by it among the imported ones.
    for (const saver of [source, memory, back])
      await saver.putWrites(at, [["log", "a"]], "task-a", "~__pregel_pull, a");
    const expected = await writesOf(source);
    expect(expected).toEqual([
      ["task-a", "__interrupt__", { value: "stop" }],
      ["task-a", "log", "a"],
      ["task-b", "log", "b"],
    ]);
    expect(await writesOf(memory)).toEqual(expected);
    expect(await writesOf(back)).toEqual(expected);
  });
});

describe("copyThreads", () => {
  it("copies every thread from IndexedDBSaver to MemorySaver and selected ones back", async () => {
    const source = idbSaver();
    await chatThread(source, "a");
    await chatThread(source, "b");
    const memory = new MemorySaver();
    const progress: number[] = [];
    const result = await copyThreads(source, memory, { onProgress: (p) => progress.push(p.threads) });
    expect(result.threads.map((t) => t.threadId).sort()).toEqual(["a", "b"]);
    expect(progress.at(-1)).toBe(2);
    for (const id of ["a", "b"]) expect(await rawThread(memory, id)).toEqual(await rawThread(source, id));

    const back = idbSaver();
    await copyThreads(memory, back, { threadIds: ["b"], mapThreadId: (id) => `${id}-back` });
    expect(await listCount(back, "a")).toBe(0);
    const strip = (r: Awaited<ReturnType<typeof rawThread>>) => r.map(({ thread, parentThread, ...rest }) => rest);
    expect(strip(await rawThread(back, "b-back"))).toEqual(strip(await rawThread(source, "b")));
    // A saver without listThreads: threads are found through list({}).
    const again = new MemorySaver();
    await copyThreads(memory, again);
    expect(await rawThread(again, "a")).toEqual(await rawThread(source, "a"));
  });
});
