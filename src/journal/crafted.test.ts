/**
 * Crafted journal records (issue 11, item 7). The journal file lives in OPFS,
 * which anyone who can edit the profile's files can edit. A record naming a
 * MessagePack extension the journal never writes (msgpackr's Set, Error,
 * RegExp, typed array, records, string bundles, structured-clone references,
 * its 0xC1 marker) is a corrupt record, like one failing its CRC: recovery
 * replays the records before it, ignores it and every record after it, cuts
 * the file there and reports `tornRecord: true`. What the journal does write
 * (the saver's real journals, and msgpackr's `undefined` and `Date`
 * timestamps in a row) still reads back in full.
 * Memory backend, so it runs the same in Node and Chromium.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import { afterEach, describe, expect, it } from "vitest";
import { joinBytes } from "../core/bytes.js";
import { sameValue } from "../core/equality.js";
import { IndexedDBSaver } from "../saver/index.js";
import { frameRecord, parseJournal } from "./format.js";
import { MemoryJournalBackend, resetMemoryJournals, type RecoveryReport } from "./index.js";
import { hex, planted, str } from "../../test/support/crafted-journal.js";

const STORES = ["checkpoints", "blobs", "writes", "threads", "meta"] as const;
const names: string[] = [];
function dbName(): string {
  const name = `journal-crafted-${Date.now()}-${names.length}`;
  names.push(name);
  return name;
}
function idb<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}
const deleteDb = (name: string) => idb(indexedDB.deleteDatabase(name) as IDBRequest<unknown>);
/** Every row of every store of the saver's database `name`. */
async function scan(name: string): Promise<Record<string, unknown[]>> {
  const db = await idb(indexedDB.open(name));
  try {
    const tx = db.transaction([...STORES], "readonly");
    const rows = await Promise.all(STORES.map((store) => idb(tx.objectStore(store).getAll())));
    return Object.fromEntries(STORES.map((store, i) => [store, rows[i]!]));
  } finally {
    db.close();
  }
}
afterEach(async () => {
  for (const name of names.splice(0)) await deleteDb(name).catch(() => undefined);
  resetMemoryJournals();
});

// msgpackr's own extensions, as msgpackr reads them; the journal writes none of them.
const ATTACKS: [name: string, hex: string][] = [
  ["a Set (0x73)", "d4 73 00 91 01"],
  [
    "a structured-clone self-reference (0x69 target holding a 0x70 reference to itself)",
    "d6 69 00 00 00 01 91 d6 70 00 00 00 01",
  ],
  ["a structured-clone reference alone (0x70)", "d6 70 00 00 00 01"],
  [
    "a record definition and record references (fixext 1 0x72, then 0x40)",
    `92 d4 72 40 92 ${str("a")} ${str("b")} 01 02 40 03 04`,
  ],
  ["a record definition with a high byte (fixext 2 0x72)", `d5 72 40 00 92 ${str("a")} ${str("b")} 01 02`],
  ["an Error (0x65)", `d4 65 00 93 ${str("Error")} ${str("x")} c0`],
  ["a typed array (0x74, Float32Array)", "c7 05 74 07 00 00 80 3f"],
  ["an ArrayBuffer through the typed-array code (0x74, 16)", "c7 02 74 10 01"],
  ["a RegExp (0x78)", `d4 78 00 92 ${str("x")} ${str("g")}`],
  [
    "bundled strings (0x62)",
    `de 00 02 ${str("a")} d6 62 00 00 00 0a c1 1e ${str("b")} c1 1e a0 d9 3c ${"78".repeat(30)}${"79".repeat(30)}`,
  ],
  ["msgpackr's internal marker byte 0xC1", "91 c1"],
  ["a bigint beyond 64 bits (0x42)", "c7 09 42 01 00 00 00 00 00 00 00 00"],
  ["an unknown code in ext 32", "c9 00 00 00 01 6d 00"],
];

describe("crafted journal records", () => {
  it.each(ATTACKS)("a record holding %s ends the journal like a corrupt one", (_name, attack) => {
    const good = joinBytes([
      frameRecord({ h: 1, db: "x" }),
      frameRecord({ o: [["meta", 0, { name: "a", value: 1 }]] }),
    ]);
    const after = frameRecord({ o: [["meta", 0, { name: "after", value: 2 }]] });
    const parsed = parseJournal(joinBytes([good, planted(attack), after]));
    expect(parsed.records).toEqual([{ h: 1, db: "x" }, { o: [["meta", 0, { name: "a", value: 1 }]] }]);
    expect(parsed.validLength).toBe(good.length);
    expect(parsed.torn).toBe(true);
  });

  it("reads back what the journal's encoder writes: undefined and Dates in rows, bytes, key ranges", () => {
    const row = {
      name: "custom",
      value: {
        kind: "custom-kdf",
        note: undefined,
        list: [undefined, 1, "two", null, true, -3.5, 2 ** 40],
        created: new Date(1_796_000_000_123), // timestamp 64
        whole: new Date(1_796_000_000_000), // timestamp 32
        old: new Date(-1), // timestamp 96
        nested: { bytes: new Uint8Array([1, 2, 3]), deeper: { u: undefined, d: new Date(0) } },
      },
    };
    const range = { l: ["t", ""], u: ["t", "", []], lo: false, uo: true };
    const records = [
      { h: 1, db: "x" },
      {
        o: [
          ["meta", 0, row],
          ["checkpoints", 3, range],
          ["writes", 4],
        ],
      },
    ];
    const file = joinBytes(records.map((record) => frameRecord(record)));
    // The encoder wrote msgpackr's undefined (fixext 1, type 0) and timestamps (type 0xff).
    expect(hex(file)).toContain("d40000");
    for (const form of ["d6ff", "d7ff", "c70cff"]) expect(hex(file)).toContain(form);
    const parsed = parseJournal(file);
    expect(parsed.torn).toBe(false);
    expect(parsed.validLength).toBe(file.length);
    expect(parsed.records).toStrictEqual(records);
  });
});

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  data: Annotation<Record<string, unknown>>(),
});
/** A graph ticking `steps` supersteps; its state holds undefined, bytes, Dates and nested objects. */
function tickGraph(saver: IndexedDBSaver, steps: number) {
  return new StateGraph(State)
    .addNode("tick", (state: typeof State.State) => ({
      count: 1,
      data: {
        step: state.count + 1,
        gone: undefined,
        list: [undefined, state.count],
        nested: {
          bytes: new Uint8Array([state.count, 255]),
          at: new Date(1_796_000_000_000 + state.count),
          none: undefined,
        },
      },
    }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (state: typeof State.State) => (state.count < steps ? "tick" : END))
    .compile({ checkpointer: saver });
}
const config = (threadId: string): RunnableConfig => ({ configurable: { thread_id: threadId }, recursionLimit: 1000 });

function journaled(name: string, reports: RecoveryReport[] = []): IndexedDBSaver {
  return new IndexedDBSaver({ dbName: name, journal: "memory", onRecovery: (report) => reports.push(report) });
}

/** A saver's real journal of every record kind: header, transactions, a snapshot (the delete compacts), more transactions. */
async function realJournal(name: string) {
  const saver = journaled(name);
  await tickGraph(saver, 3).invoke({ count: 0 }, config("gone"));
  await tickGraph(saver, 4).invoke({ count: 0 }, config("t"));
  await saver.deleteThread("gone");
  await tickGraph(saver, 3).invoke({ count: 0 }, config("t2"));
  const latest = await saver.getTuple(config("t"));
  await saver.close();
  const file = MemoryJournalBackend.file(name)!;
  const kinds = (parseJournal(file).records as object[]).map((record) => Object.keys(record).join());
  expect(kinds[0]).toBe("h,db");
  expect(kinds[1]).toBe("snap");
  expect(kinds.slice(2)).toEqual(kinds.slice(2).map(() => "o"));
  expect(kinds.length).toBeGreaterThan(4);
  return { file, records: kinds.length, rows: await scan(name), latest };
}

describe("saver recovery from a crafted journal", () => {
  // The five of issue 11: each would otherwise replay into IndexedDB as a Set, an Error, a typed array or records.
  const cases = ATTACKS.filter(([name]) => /Set|self-reference|fixext 1 0x72|Error|Float32Array/.test(name));

  it.each(cases)(
    "refuses a record holding %s: the records before it are restored, it and the rest are dropped and reported",
    async (_name, attack) => {
      const name = dbName();
      const real = await realJournal(name);
      const after = frameRecord({ o: [["meta", 0, { name: "after", value: 1 }]] });
      MemoryJournalBackend.setFile(name, joinBytes([real.file, planted(attack), after]));
      await deleteDb(name); // the database is gone: everything comes from the journal

      const reports: RecoveryReport[] = [];
      const saver = journaled(name, reports);
      expect((await saver.getTuple(config("t")))?.checkpoint).toStrictEqual(real.latest?.checkpoint);
      expect(reports).toHaveLength(1);
      expect(reports[0]).toMatchObject({
        kind: "restored",
        fromEmpty: true,
        tornRecord: true,
        journalRecords: real.records - 1,
      });
      // Exactly the database the journal's good records describe: nothing planted, nothing after it.
      expect(sameValue(await scan(name), real.rows)).toBe(true);
      // The file is cut after the last good record; the journal goes on from there.
      expect(hex(MemoryJournalBackend.file(name)!)).toBe(hex(real.file));
      await tickGraph(saver, 6).invoke({ count: 0 }, config("t"));
      await saver.close();

      const again: RecoveryReport[] = [];
      const reopened = journaled(name, again);
      expect((await reopened.getTuple(config("t")))?.checkpoint.channel_values).toMatchObject({ count: 6 });
      expect(again[0]).toMatchObject({ kind: "ok", tornRecord: false });
      await reopened.close();
    },
  );

  it("restores a real journal in full: values with undefined, and rows holding undefined and Dates", async () => {
    const name = dbName();
    const real = await realJournal(name);
    // What the journal writes for a row a custom serializer's key record could be.
    const custom = { name: "custom", value: { kind: "custom", note: undefined, created: new Date(1_796_000_000_123) } };
    const file = joinBytes([real.file, frameRecord({ o: [["meta", 0, custom]] })]);
    MemoryJournalBackend.setFile(name, file);
    await deleteDb(name);

    const reports: RecoveryReport[] = [];
    const saver = journaled(name, reports);
    const tuple = await saver.getTuple(config("t"));
    expect(tuple?.checkpoint).toStrictEqual(real.latest?.checkpoint);
    expect((tuple?.checkpoint.channel_values.data as { nested: object }).nested).toStrictEqual({
      bytes: new Uint8Array([3, 255]),
      at: new Date(1_796_000_000_003),
      none: undefined,
    });
    expect(reports[0]).toMatchObject({
      kind: "restored",
      fromEmpty: true,
      tornRecord: false,
      journalRecords: real.records,
    });
    const rows = await scan(name);
    const customRow = rows.meta!.find((row) => (row as { name: string }).name === "custom");
    expect(customRow).toStrictEqual(custom);
    expect(sameValue({ ...rows, meta: rows.meta!.filter((row) => row !== customRow) }, real.rows)).toBe(true);
    expect(hex(MemoryJournalBackend.file(name)!)).toBe(hex(file));
    await saver.close();
  });
});

describe("saver recovery from a journal record of a shape the journal never writes", () => {
  // Well-formed MessagePack with a valid CRC: only its shape is wrong. Before
  // the fix each threw out of recovery (TypeError, DataError, NotFoundError)
  // at every open, so no operation of the saver could run at all.
  const SHAPES: [name: string, record: unknown][] = [
    ["a payload that is not an object", "x"],
    ["a null payload", null],
    ["ops that are not a list", { o: 5 }],
    ["an op that is not a list", { o: [null] }],
    ["a put of a row without its key", { o: [["checkpoints", 0, { thread_id: "t" }]] }],
    ["an insert of a row that is not an object", { o: [["meta", 1, 7]] }],
    ["a delete of something that is not a key", { o: [["meta", 2, {}]] }],
    ["a delete of a range that is not one", { o: [["meta", 3, null]] }],
    ["a delete of a range with an invalid bound", { o: [["meta", 3, { l: {}, lo: false, uo: false }]] }],
    ["an unknown request code", { o: [["meta", 9, { name: "x", value: 1 }]] }],
    ["a snapshot of a store that is not a list", { snap: { checkpoints: 5 } }],
    ["a snapshot row without its key", { snap: { checkpoints: [{ a: 1 }] } }],
  ];

  for (const wiped of [true, false]) {
    it.each(SHAPES)(
      `${wiped ? "after a wipe" : "on a database that lost nothing"}: %s ends the journal like a corrupt record`,
      async (_name, record) => {
        const name = dbName();
        const real = await realJournal(name);
        const after = frameRecord({ o: [["meta", 0, { name: "after", value: 1 }]] });
        MemoryJournalBackend.setFile(name, joinBytes([real.file, frameRecord(record), after]));
        if (wiped) await deleteDb(name);

        const reports: RecoveryReport[] = [];
        const saver = journaled(name, reports);
        expect((await saver.getTuple(config("t")))?.checkpoint).toStrictEqual(real.latest?.checkpoint);
        expect(reports[0]).toMatchObject({ kind: wiped ? "restored" : "ok", tornRecord: true });
        expect(sameValue(await scan(name), real.rows)).toBe(true);
        // Cut after the last good record (a database that lost nothing re-journals its newest rows after it).
        const file = MemoryJournalBackend.file(name)!;
        expect(hex(file.subarray(0, real.file.length))).toBe(hex(real.file));
        const added = parseJournal(file.subarray(real.file.length));
        expect(added.torn).toBe(false);
        expect(JSON.stringify(added.records)).not.toContain('"after"');
        await saver.close();
      },
    );
  }

  it("a request to a store the database lacks is skipped, as replay skips it", async () => {
    const name = dbName();
    const real = await realJournal(name);
    const file = joinBytes([real.file, frameRecord({ o: [["nope", 0, { a: 1 }]] })]);
    MemoryJournalBackend.setFile(name, file);
    const reports: RecoveryReport[] = [];
    const saver = journaled(name, reports);
    expect((await saver.getTuple(config("t")))?.checkpoint).toStrictEqual(real.latest?.checkpoint);
    expect(reports[0]).toMatchObject({ kind: "restored", tornRecord: false });
    expect(sameValue(await scan(name), real.rows)).toBe(true);
    await saver.close();
  });
});

describe("a checkpoint row edited in the database, which recovery journals again", () => {
  // The journal's last records are writes to c2 (more than the replay margin), so recovery re-appends the
  // newest rows of c2's namespace as they are in the database, the edited c2 among them: before, that threw
  // ("Cannot convert undefined or null to object", a DataError) out of recovery at every open, and no
  // operation of the saver ran, not even on another thread.
  const EDITS: [name: string, edit: Record<string, unknown>][] = [
    ["its channel versions removed", { channel_versions: null }],
    ["a version that is not a key (a value held in a blob row)", { channel_versions: { big: null } }],
  ];
  it.each(EDITS)(
    "%s: the saver opens, the other thread reads, the row reads as an altered one",
    async (_name, edit) => {
      const name = dbName();
      const saver = journaled(name);
      const at = (thread_id: string, checkpoint_id?: string): RunnableConfig => ({
        configurable: { thread_id, checkpoint_ns: "", ...(checkpoint_id && { checkpoint_id }) },
      });
      const checkpoint = (id: string, big: string) => ({
        ...emptyCheckpoint(),
        id,
        channel_values: { big },
        channel_versions: { big: Number(id) },
      });
      const meta = { source: "loop", step: 0, parents: {} } as CheckpointMetadata;
      await saver.put(at("other"), checkpoint("1", "fine"), meta, { big: 1 });
      const c1 = await saver.put(at("t"), checkpoint("1", "one"), meta, { big: 1 });
      const c2 = await saver.put(c1, checkpoint("2", "x".repeat(5000)), meta, { big: 2 });
      for (let i = 0; i < 20; i++) await saver.putWrites(c2, [["big", i]], `task-${i}`);
      await saver.close();
      const db = await idb(indexedDB.open(name));
      const tx = db.transaction(["checkpoints"], "readwrite");
      const row = (await idb(tx.objectStore("checkpoints").get(["t", "", "2"]))) as Record<string, unknown>;
      await idb(tx.objectStore("checkpoints").put({ ...row, ...edit }));
      db.close();

      const reports: RecoveryReport[] = [];
      const reopened = journaled(name, reports);
      expect((await reopened.getTuple(at("other")))?.checkpoint.channel_values).toEqual({ big: "fine" });
      expect(reports[0]).toMatchObject({ kind: "ok" });
      await expect(reopened.getTuple(at("t", "2"))).rejects.toThrow(/Checkpoint 2 of thread "t"/);
      await reopened.close();
    },
  );
});

describe("a journal of another database", () => {
  // One custom JournalBackend given to two savers, or a journal file copied under another database's name:
  // before, the second saver replayed the first one's rows into its own database and went on appending to
  // that journal.
  it("is neither replayed nor touched: the report says whose it is, and the saver runs unjournaled", async () => {
    const first = dbName();
    const second = dbName();
    const real = await realJournal(first);
    MemoryJournalBackend.setFile(second, real.file);

    const reports: RecoveryReport[] = [];
    const saver = journaled(second, reports);
    expect(await saver.getTuple(config("t"))).toBeUndefined();
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ kind: "journal-unavailable", recoveredWrites: 0 });
    expect(String(reports[0]!.error)).toContain(`database "${first}"`);
    expect(String(reports[0]!.error)).toContain(`"${second}"`);
    await tickGraph(saver, 2).invoke({ count: 0 }, config("mine"));
    await saver.close();
    expect(hex(MemoryJournalBackend.file(second)!)).toBe(hex(real.file));
    expect((await scan(second)).checkpoints!.map((row) => (row as { thread_id: string }).thread_id)).toEqual(
      expect.arrayContaining(["mine"]),
    );
    expect(JSON.stringify((await scan(second)).checkpoints)).not.toContain('"t2"');
  });
});
