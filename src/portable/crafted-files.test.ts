/**
 * Files made by hand, with a correct checksum and counts, that exportThread
 * never writes: validation refuses them with a ThreadFileError before the
 * import writes or deletes anything, even under `ifExists: "replace"`.
 * Node and Chromium.
 */
import { MemorySaver } from "@langchain/langgraph/web";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { chat } from "../../test/support/chat-graph.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { rawThread } from "../../test/support/portable-scenario.js";
import { assemble, rewriteThreadFile } from "../../test/support/thread-files.js";
import {
  ThreadFileError,
  exportThread,
  importThread,
  validateThreadExport,
  type CheckpointRecord,
  type ImportThreadOptions,
  type TaskPathsRecord,
} from "./index.js";

const track = trackSavers<IndexedDBSaver>();

/** An unencrypted export of a two-turn chat, its `C` records changed by `edit`, counts and checksum fixed up. */
async function craftedFile(edit: (records: CheckpointRecord[]) => void): Promise<Uint8Array> {
  const source = track(new IndexedDBSaver({ dbName: freshDbName("crafted-source") }));
  await chat(source, "t", ["one", "two"], true);
  return rewriteThreadFile(await exportThread(source, "t", { as: "bytes" }), (_blobs, records) => edit(records));
}

/**
 * Imports `file` with `ifExists: "replace"` over a thread "t" the target
 * holds; expects a ThreadFileError matching `pattern` and "t" unchanged.
 */
async function expectRefused(
  target: BaseCheckpointSaver,
  file: Uint8Array,
  pattern: RegExp,
  options: ImportThreadOptions = {},
): Promise<void> {
  await chat(target, "t", ["my local conversation"], true);
  const before = await rawThread(target, "t");
  const error = await importThread(target, file, { ...options, ifExists: "replace" }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ThreadFileError);
  expect((error as Error).message).toMatch(pattern);
  expect(await rawThread(target, "t")).toEqual(before);
}

describe("a file without checkpoints", () => {
  const header = {
    format: "langgraph-thread",
    threadId: "t",
    source: "IndexedDBSaver",
    namespaces: [],
    exportedAt: "2026-01-01T00:00:00.000Z",
    generator: "langgraph-checkpoint-indexeddb",
  };
  const none = { checkpoints: 0, blobs: 0, writes: 0 };

  it("is refused, and does not delete the thread it would replace", async () => {
    const file = assemble({ ...header, version: 1, serde: "msgpack" }, [], none);
    await expect(validateThreadExport(file)).rejects.toThrow(ThreadFileError);
    await expectRefused(track(new IndexedDBSaver({ dbName: freshDbName("crafted") })), file, /no checkpoint/);
    await expectRefused(new MemorySaver(), file, /no checkpoint/);
  });

  it("is refused as an encrypted (version 2) file forged without the key", async () => {
    const key = await EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(7));
    const file = assemble({ ...header, version: 2, serde: "msgpack+aes-gcm", exportId: "00".repeat(16) }, [], none);
    const target = track(new IndexedDBSaver({ dbName: freshDbName("crafted"), serde: key }));
    await expectRefused(target, file, /no checkpoint/, { serde: key });
  });
});

describe("parent links that are not a tree", () => {
  const targets = () => [track(new IndexedDBSaver({ dbName: freshDbName("crafted") })), new MemorySaver()];

  it("a cycle through the namespace is refused (a MemorySaver target would loop reading it)", async () => {
    const file = await craftedFile((records) => {
      records[0]!.parent = records[records.length - 1]!.id;
    });
    await expect(validateThreadExport(file)).rejects.toThrow(/cycle/);
    for (const target of targets()) await expectRefused(target, file, /cycle/);
  });

  it("a checkpoint that is its own parent is refused", async () => {
    const file = await craftedFile((records) => {
      records[1]!.parent = records[1]!.id;
    });
    for (const target of targets()) await expectRefused(target, file, /cycle/);
  });

  it("a parent the file does not hold is still accepted (a pruned thread's oldest checkpoint)", async () => {
    const file = await craftedFile((records) => {
      records[0]!.parent = "gone";
    });
    await expect(validateThreadExport(file)).resolves.toMatchObject({ threadId: "t" });
  });
});

describe("task paths that do not fit the file", () => {
  /** The file with its task paths record (`p`) changed by `edit`. */
  async function withPaths(edit: (paths: TaskPathsRecord) => TaskPathsRecord): Promise<Uint8Array> {
    const source = track(new IndexedDBSaver({ dbName: freshDbName("crafted-source") }));
    await chat(source, "t", ["one", "two"], true);
    return rewriteThreadFile(await exportThread(source, "t", { as: "bytes" }), (_blobs, _records, paths) => {
      expect(paths!.checkpoints[0]!.paths).toContain("~__pregel_pull, __start__");
      return edit(paths!);
    });
  }
  const cases: [string, (paths: TaskPathsRecord) => TaskPathsRecord, RegExp][] = [
    [
      "one more path than writes",
      ({ checkpoints: [first, ...rest] }) => ({ checkpoints: [{ ...first!, paths: [...first!.paths, ""] }, ...rest] }),
      /task paths to checkpoint .* which has \d+ pending writes/,
    ],
    [
      "paths of a checkpoint the file does not hold",
      ({ checkpoints }) => ({ checkpoints: [...checkpoints, { ns: "", id: "elsewhere", paths: [""] }] }),
      /checkpoint elsewhere .* the file does not hold/,
    ],
    ["a checkpoint's paths twice", ({ checkpoints }) => ({ checkpoints: [...checkpoints, checkpoints[0]!] }), /twice/],
    [
      "a path that is not a string",
      ({ checkpoints: [first, ...rest] }) => ({
        checkpoints: [{ ...first!, paths: first!.paths.map(() => 7 as unknown as string) }, ...rest],
      }),
      /not a valid task paths record/,
    ],
    [
      "a path savers refuse",
      ({ checkpoints: [first, ...rest] }) => ({
        checkpoints: [{ ...first!, paths: first!.paths.map(() => "a\u0000b") }, ...rest],
      }),
      /"task_path".*U\+0000/,
    ],
  ];
  for (const [what, edit, pattern] of cases) {
    it(`${what} is refused by validation, before a replace deletes anything`, async () => {
      const file = await withPaths(edit);
      await expect(validateThreadExport(file)).rejects.toThrow(pattern);
      await expectRefused(new MemorySaver(), file, pattern);
    });
  }
});

describe("ids the savers refuse", () => {
  const cases: [string, (records: CheckpointRecord[]) => void, RegExp][] = [
    [
      "a task id",
      (records) => void records.at(-1)!.writes.push(["constructor", "messages", []]),
      /"task_id".*constructor/,
    ],
    [
      "a checkpoint id",
      (records) => {
        const last = records.at(-1)!;
        last.id = last.checkpoint.id = "__proto__";
      },
      /"checkpoint\.id".*__proto__/,
    ],
    ["a parent id", (records) => void (records[0]!.parent = "prototype"), /"checkpoint_id".*prototype/],
    // U+0000: what the sync server's PostgreSQL text cannot hold (a lone surrogate would not survive msgpack).
    ["a write's channel", (records) => void records.at(-1)!.writes.push(["task", "a\u0000b", 1]), /"channel".*U\+0000/],
    // Versions without a value: no B record, no `values` entry, so only channel_versions names them.
    [
      "a channel only its versions name",
      (records) => void (records.at(-1)!.checkpoint.channel_versions!["a\u0000b"] = 1),
      /"checkpoint\.channel_versions".*U\+0000/,
    ],
    [
      "a channel version",
      (records) => void (records.at(-1)!.checkpoint.channel_versions!.seen = "1\u00002"),
      /"checkpoint\.channel_versions".*U\+0000/,
    ],
  ];
  for (const [what, edit, pattern] of cases) {
    it(`${what} is refused by validation, before a replace deletes anything`, async () => {
      const file = await craftedFile(edit);
      await expect(validateThreadExport(file)).rejects.toThrow(ThreadFileError);
      await expectRefused(track(new IndexedDBSaver({ dbName: freshDbName("crafted") })), file, pattern);
      await expectRefused(new MemorySaver(), file, pattern);
    });
  }

  it("a thread id to import under that the savers refuse is refused by validation too", async () => {
    // A caller validating several files before writing any (the Playwright kit's restore) learns it there.
    const file = await craftedFile(() => undefined);
    await expect(validateThreadExport(file, { targetThreadId: "" })).rejects.toThrow(/non-empty string/);
    await expect(validateThreadExport(file, { targetThreadId: "constructor" })).rejects.toThrow(/constructor/);
    expect((await validateThreadExport(file, { targetThreadId: "elsewhere" })).threadId).toBe("elsewhere");
  });
});
