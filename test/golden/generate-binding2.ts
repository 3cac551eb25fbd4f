/**
 * Writes `saver-encrypted-binding2.json`: an encrypted IndexedDBSaver
 * database whose checkpoints and writes are sealed under row binding
 * version 2 (a checkpoint's parent link, a write's channel and task path
 * inside the associated data; issue 11 item 2), with every read recorded.
 * Run ONCE, by hand, and commit the output (the other golden files are
 * generate.ts's and are never rewritten):
 *
 *     npx vitest run -c test/golden/generate-binding2.config.ts
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { HumanMessage } from "@langchain/core/messages";
import { it } from "vitest";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { chatGraph } from "../support/chat-graph.js";
import { RAW_KEY, dumpDatabase, readSaver, writeDeletedThread, writeGoldenThread } from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

it("writes the binding version 2 golden file", async () => {
  const dbName = "golden-encrypted-binding2";
  const saver = new IndexedDBSaver({ dbName, serde: await EncryptedSerializer.fromRawKey(RAW_KEY) });
  await writeGoldenThread(saver);
  const graph = chatGraph(saver, true);
  for (const text of ["hello", "again"])
    await graph.invoke({ messages: [new HumanMessage(text)] }, { configurable: { thread_id: "t-chat" } });
  await writeDeletedThread(saver);
  const expected = await readSaver(saver);
  await saver.close();
  const dump = await dumpDatabase(indexedDB, dbName);
  writeFileSync(join(here, "saver-encrypted-binding2.json"), JSON.stringify({ dbName, dump, expected }, null, 1) + "\n");
}, 120_000);
