/**
 * Row format 2 binds a value held inline exactly as the blob row it stands
 * for (thread, namespace, channel, version): moved to another version, to
 * another row's same channel, or to another thread, it fails closed with a
 * `DecryptionError`, and the rows left alone still read. Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { DecryptionError, EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import type { CheckpointRow } from "../../src/rows/shapes.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { checkpointOf as cp, stepMetadata as meta, threadAt as at } from "../support/inline-rows.js";
import { putRaw, rowsOfThread, scanAll } from "../support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 7);

describe("values held inline (row format 2), encrypted", () => {
  it("fail closed when moved to another version, row or thread; the rest still reads", async () => {
    const dbName = freshDbName("inline-binding");
    const serde = await EncryptedSerializer.fromRawKey(KEY);
    const saver = track(new IndexedDBSaver({ dbName, serde }));
    const first = await saver.put(at("t"), cp("c1", { a: "one", b: "bee" }, { a: 1, b: 1 }), meta, { a: 1, b: 1 });
    await saver.put(first, cp("c2", { a: "two", b: "bee" }, { a: 2, b: 1 }), meta, { a: 2 });
    await saver.put(at("u"), cp("c1", { a: "other" }, { a: 1 }), meta, { a: 1 });
    await saver.close();
    const rowsOf = async (thread: string) =>
      rowsOfThread(await scanAll(dbName), thread).checkpoints as unknown as CheckpointRow[];
    const [c1, c2] = await rowsOf("t");
    const [u1] = await rowsOf("u");
    expect(c1!.inline && Object.keys(c1!.inline).sort()).toEqual(["a", "b"]);
    expect(Object.keys(c2!.inline ?? {})).toEqual(["a"]);

    const cases: [string, CheckpointRow, string][] = [
      // c1's `a` (version 1) in place of c2's `a` (version 2): same channel, another version.
      ["another version", { ...c2!, inline: { a: c1!.inline!.a! } }, "c2"],
      // c1's `b` held as `a` in c1: another channel, same row.
      ["another channel", { ...c1!, inline: { ...c1!.inline!, a: c1!.inline!.b! } }, "c1"],
      // Thread u's `a` (version 1) in thread t's c1: another thread, same channel and version.
      ["another thread", { ...c1!, inline: { ...c1!.inline!, a: u1!.inline!.a! } }, "c1"],
    ];
    for (const [what, tampered, id] of cases) {
      await putRaw(dbName, "checkpoints", [tampered]);
      const reader = track(new IndexedDBSaver({ dbName, serde }));
      await expect(reader.getTuple(at("t", id)), what).rejects.toBeInstanceOf(DecryptionError);
      expect((await reader.getTuple(at("u")))?.checkpoint.channel_values, what).toEqual({ a: "other" });
      await reader.close();
      await putRaw(dbName, "checkpoints", [id === "c1" ? c1! : c2!]);
    }
    const reader = track(new IndexedDBSaver({ dbName, serde }));
    expect((await reader.getTuple(at("t")))?.checkpoint.channel_values).toEqual({ a: "two", b: "bee" });
  });
});
