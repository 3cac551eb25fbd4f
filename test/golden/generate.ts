/**
 * Writes the golden files of test/suites/golden-formats.test.ts with the code
 * as it is today. Run ONCE, by hand, and commit the output; the test never
 * regenerates them (regenerating would defeat the point: a format change
 * must show up as a failing test, not as a new fixture).
 *
 *     npx vitest run -c test/golden/generate.config.ts
 *
 * It runs in Node on fake-indexeddb (a Vitest "test" only to get Vite's
 * TypeScript and module resolution).
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { HumanMessage } from "@langchain/core/messages";
import type { CheckpointMetadata, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { Command, MemorySaver, Overwrite, Send } from "@langchain/langgraph/web";
import { it } from "vitest";
import {
  EncryptedSerializer,
  IndexedDBSaver,
  IndexedDBStore,
  MsgpackSerializer,
  importThread,
} from "../../src/index.js";
import { MemoryJournalBackend } from "../../src/journal.js";
import { inspectEnvelope } from "../../src/serde.js";
import { parseJournal } from "../../src/journal/format.js";
import { writeSaverScenario } from "./saver-golden.js";
import {
  APP_TYPES,
  FROZEN_EXT,
  FixedEmbeddings,
  RAW_KEY,
  checkpointId,
  cp,
  fixedError,
  latePutIsDropped,
  writeStoreScenario,
  comparable,
  dumpDatabase,
  encodeTagged,
  hasExtension,
  msgpackClassValue,
  msgpackValue,
  readSaver,
  readStore,
  withoutStacks,
  toBase64,
  type Tagged,
} from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

function write(name: string, value: unknown): void {
  writeFileSync(join(here, name), JSON.stringify(value, null, 1) + "\n");
}

async function saverFixture(name: string, serde: SerializerProtocol | undefined): Promise<Record<string, unknown>> {
  const dbName = `golden-${name}`;
  const saver = new IndexedDBSaver({ dbName, serde });
  await writeSaverScenario(saver);
  const expected = await readSaver(saver);
  await saver.close();
  const dump = await dumpDatabase(indexedDB, dbName);
  // Check on a copy that the late put is dropped (the dump is taken before).
  const check = new IndexedDBSaver({ dbName, serde });
  if (!(await latePutIsDropped(check))) throw new Error("late put not dropped");
  await check.close();
  return { dbName, dump, expected };
}

async function storeFixture(name: string, serde: SerializerProtocol | undefined): Promise<Record<string, unknown>> {
  const dbName = `golden-store-${name}`;
  const store = new IndexedDBStore({ dbName, serde, index: { dims: 4, embeddings: new FixedEmbeddings(), fields: ["text"] } });
  await writeStoreScenario(store);
  const expected = await readStore(store);
  await store.close();
  return { dbName, dump: await dumpDatabase(indexedDB, dbName), expected };
}

async function msgpackFixture(): Promise<Record<string, unknown>> {
  const serde = new MsgpackSerializer({ types: APP_TYPES });
  const value = msgpackValue();
  const [type, bytes] = await serde.dumpsTyped(value);
  for (const [name, code] of Object.entries(FROZEN_EXT)) {
    if (!hasExtension(bytes, code)) throw new Error(`the golden value does not exercise ${name}`);
  }
  const withClasses = new MsgpackSerializer({ types: [Send, Command, Overwrite] });
  const [classType, classBytes] = await withClasses.dumpsTyped(msgpackClassValue());
  const [undefType, undefBytes] = await serde.dumpsTyped(undefined);
  return {
    type,
    payload: toBase64(bytes),
    decoded: comparable(await serde.loadsTyped(type, bytes)),
    classes: { type: classType, payload: toBase64(classBytes), decoded: comparable(await withClasses.loadsTyped(classType, classBytes)) },
    undefined: { type: undefType, payload: toBase64(undefBytes) },
  };
}

async function encryptionFixture(): Promise<Record<string, unknown>> {
  const serde = await EncryptedSerializer.fromRawKey(RAW_KEY);
  const value = { hello: "world", n: 1, when: new Date(Date.UTC(2026, 10, 30)), bytes: new Uint8Array([7, 7]) };
  const [type, bytes] = await serde.dumpsTyped(value);
  return {
    type,
    envelope: toBase64(bytes),
    info: inspectEnvelope(bytes) as unknown as Tagged,
    decoded: comparable(await serde.loadsTyped(type, bytes)),
  };
}

async function journalFixture(): Promise<Record<string, unknown>> {
  const dbName = "golden-journal";
  const saver = new IndexedDBSaver({ dbName, journal: "memory" });
  const thread = "t-journal";
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp(30, { messages: [new HumanMessage({ content: "j", id: "j1" })], n: 1 }, { messages: 1, n: 1 }), { source: "input", step: -1, parents: {}, run_id: "run-j" } as CheckpointMetadata, { messages: 1, n: 1 });
  await saver.putWrites({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(30) } }, [["n", 2], ["__error__", fixedError()]], "task-j", "~__pregel_pull, j");
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(30) } }, cp(31, { messages: [new HumanMessage({ content: "j", id: "j1" })], n: 2 }, { messages: 1, n: 2 }), { source: "loop", step: 0, parents: {} } as CheckpointMetadata, { n: 2 });
  await saver.put({ configurable: { thread_id: "t-gone", checkpoint_ns: "" } }, cp(32, { x: 1 }, { x: 1 }), { source: "input", step: -1, parents: {} } as CheckpointMetadata, { x: 1 });
  await saver.deleteThread("t-gone");
  const file = MemoryJournalBackend.file(dbName)!;
  const expected = {
    latest: comparable(await saver.getTuple({ configurable: { thread_id: thread } })),
    gone: comparable(await saver.getTuple({ configurable: { thread_id: "t-gone" } })),
  };
  // Compaction: a {snap} record, then one more transaction.
  await saver.compactJournal();
  await saver.putWrites({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(31) } }, [["n", 3]], "task-k");
  const compacted = MemoryJournalBackend.file(dbName)!;
  const compactedExpected = comparable(await saver.getTuple({ configurable: { thread_id: thread } }));
  await saver.close();
  return {
    dbName,
    file: toBase64(file),
    records: encodeTagged(parseJournal(file).records),
    expected,
    compacted: { file: toBase64(compacted), records: encodeTagged(parseJournal(compacted).records), latest: compactedExpected },
    // Everything the database held after the compacted journal's last transaction.
    dump: await dumpDatabase(indexedDB, dbName),
  };
}

async function exportFixture(): Promise<Record<string, unknown>> {
  const saver = new IndexedDBSaver({ dbName: "golden-plain" });
  const file = await saver.exportThread("t-golden", { as: "bytes" });
  const again = await saver.exportThread("t-golden", { as: "bytes" });
  await saver.close();
  // MemorySaver keeps its default JsonPlusSerializer (it calls loadsTyped("json", …), so it
  // cannot run on MsgpackSerializer); JsonPlus cannot hold the subgraph's Map/bigint values,
  // so the comparable read is the root namespace, and every namespace's ids.
  const memory = new MemorySaver();
  const result = await importThread(memory, file);
  const listOf = async (s: MemorySaver | IndexedDBSaver, checkpointNs?: string) => {
    const out: unknown[] = [];
    for await (const t of s.list({ configurable: { thread_id: "t-golden", checkpoint_ns: checkpointNs } })) out.push(t);
    return comparable(out);
  };
  const idsOf = async (s: MemorySaver | IndexedDBSaver) => {
    const out: unknown[] = [];
    for await (const t of s.list({ configurable: { thread_id: "t-golden" } })) out.push(t.config.configurable);
    return comparable(out);
  };
  const idb = new IndexedDBSaver({ dbName: "golden-export-import" });
  await importThread(idb, file);
  const reexported = await idb.exportThread("t-golden", { as: "bytes" });
  const out = {
    file: toBase64(file),
    sameLength: again.length === file.length,
    reexportAfterImportLength: reexported.length,
    importResult: comparable(result),
    memoryRoot: withoutStacks(await listOf(memory, "")),
    memoryIds: await idsOf(memory),
    indexeddb: await listOf(idb),
  };
  await idb.close();
  return out;
}

it("writes the golden files", async () => {
  write("saver-plain.json", await saverFixture("plain", undefined));
  write("saver-encrypted.json", { ...(await saverFixture("encrypted", await EncryptedSerializer.fromRawKey(RAW_KEY))), context: await encryptionFixture() });
  write("store-native.json", await storeFixture("native", undefined));
  write("store-encrypted.json", await storeFixture("encrypted", await EncryptedSerializer.fromRawKey(RAW_KEY)));
  write("msgpack.json", await msgpackFixture());
  write("journal.json", await journalFixture());
  write("export.json", await exportFixture());
}, 120_000);
