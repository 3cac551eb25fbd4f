/**
 * Writes `saver-plain-format2.json` and `saver-encrypted-format2.json`: row
 * format 2 databases (`meta` "format" 2, schema version 4) holding the
 * thread of format1-sizes.ts (values from 1 to 12 KiB: the small ones inline
 * in their checkpoint rows, the others in blob rows) and the thread of
 * format2.ts (a removed run whose inline values its kept child still
 * names), written by the first
 * release of row format 2, with the journal the same saver kept. Run ONCE,
 * by hand, and commit the output:
 *
 *     npx vitest run -c test/golden/generate-format2.config.ts
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { MemoryJournalBackend } from "../../src/journal.js";
import { writeSizesThread } from "./format1-sizes.js";
import { readFormat2, writeInlineThread } from "./format2.js";
import { RAW_KEY, dumpDatabase, toBase64 } from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

async function writeFormat2Golden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  const saver = new IndexedDBSaver({ dbName, journal: "memory", ...(serde ? { serde } : {}) });
  await writeSizesThread(saver);
  await writeInlineThread(saver);
  const expected = await readFormat2(saver);
  await saver.close();
  const journal = MemoryJournalBackend.file(dbName);
  if (!journal) throw new Error(`no journal was kept for ${dbName}`);
  const dump = await dumpDatabase(indexedDB, dbName);
  writeFileSync(join(here, file), JSON.stringify({ dbName, dump, journal: toBase64(journal), expected }, null, 1) + "\n");
}

it("writes the row format 2 golden files", async () => {
  await writeFormat2Golden("saver-plain-format2.json", "golden-plain-format2");
  await writeFormat2Golden("saver-encrypted-format2.json", "golden-encrypted-format2", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
