/**
 * The saver golden files written after the first ones: the row binding
 * versions (`saver-encrypted-binding<N>.json`) and the schema versions
 * (`saver-<plain|encrypted>-schema<N>.json`). Each holds the golden thread,
 * a chat graph's thread and a deleted thread written by an IndexedDBSaver
 * with the code of the day, its database dump and every read recorded. A
 * generator writes what the current code writes: once a later version
 * exists, running an older version's generator again would write the new
 * version's rows, so each is run once, when its version is added.
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { HumanMessage } from "@langchain/core/messages";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { chatGraph } from "../support/chat-graph.js";
import { RAW_KEY, dumpDatabase, readSaver, writeDeletedThread, writeGoldenThread } from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

/** Writes `test/golden/<file>` from a new database `dbName` (fake-indexeddb), by a saver on `serde` (default: the saver's own). */
export async function writeSaverGolden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  const saver = new IndexedDBSaver({ dbName, ...(serde ? { serde } : {}) });
  await writeGoldenThread(saver);
  const graph = chatGraph(saver, true);
  for (const text of ["hello", "again"])
    await graph.invoke({ messages: [new HumanMessage(text)] }, { configurable: { thread_id: "t-chat" } });
  await writeDeletedThread(saver);
  const expected = await readSaver(saver);
  await saver.close();
  const dump = await dumpDatabase(indexedDB, dbName);
  writeFileSync(join(here, file), JSON.stringify({ dbName, dump, expected }, null, 1) + "\n");
}

/** The same, by an encrypted saver (`EncryptedSerializer.fromRawKey(RAW_KEY)`). */
export async function writeEncryptedSaverGolden(file: string, dbName: string): Promise<void> {
  await writeSaverGolden(file, dbName, await EncryptedSerializer.fromRawKey(RAW_KEY));
}

/**
 * The first golden files' saver scenario (generate.ts): the golden thread, a
 * chat on a MessagesDeltaValue channel, a pruned chat (its kept checkpoint
 * gets a DeltaSnapshot) and a deleted thread.
 */
export async function writeSaverScenario(saver: IndexedDBSaver): Promise<void> {
  await writeGoldenThread(saver);
  // A real graph with a MessagesDeltaValue channel.
  const chat = async (threadId: string, turns: string[]) => {
    const graph = chatGraph(saver, true);
    for (const text of turns) await graph.invoke({ messages: [new HumanMessage(text)] }, { configurable: { thread_id: threadId } });
    return graph;
  };
  await chat("t-chat", ["hello", "again"]);
  const graph = await chat("t-pruned", ["one", "two", "three"]);
  // keep_latest with the graph's channels: the kept checkpoint gets a DeltaSnapshot blob.
  await saver.prune(["t-pruned"], { channels: graph.channels as Record<string, unknown> });
  await writeDeletedThread(saver);
}
