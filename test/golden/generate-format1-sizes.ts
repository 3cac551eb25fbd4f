/**
 * Writes `saver-plain-format1-sizes.json` and `saver-encrypted-format1-sizes.json`:
 * row format 1 databases (`meta` "format" 1, schema version 3) holding the
 * values of format1-sizes.ts, written by the code of the day before a row
 * format that keeps small values inline, with the journal the same saver kept
 * (the `"memory"` backend writes the same bytes as `"opfs"`). Run ONCE, by
 * hand, and commit the output:
 *
 *     npx vitest run -c test/golden/generate-format1-sizes.config.ts
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { MemoryJournalBackend } from "../../src/journal.js";
import { readSizesThread, writeSizesThread } from "./format1-sizes.js";
import { RAW_KEY, dumpDatabase, toBase64 } from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

async function writeSizesGolden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  const saver = new IndexedDBSaver({ dbName, journal: "memory", ...(serde ? { serde } : {}) });
  await writeSizesThread(saver);
  const expected = await readSizesThread(saver);
  await saver.close();
  const journal = MemoryJournalBackend.file(dbName);
  if (!journal) throw new Error(`no journal was kept for ${dbName}`);
  const dump = await dumpDatabase(indexedDB, dbName);
  writeFileSync(join(here, file), JSON.stringify({ dbName, dump, journal: toBase64(journal), expected }, null, 1) + "\n");
}

it("writes the row format 1 size golden files", async () => {
  await writeSizesGolden("saver-plain-format1-sizes.json", "golden-plain-format1-sizes");
  await writeSizesGolden("saver-encrypted-format1-sizes.json", "golden-encrypted-format1-sizes", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
