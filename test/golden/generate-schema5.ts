/**
 * Writes `saver-plain-schema5.json` and `saver-encrypted-schema5.json`:
 * schema version 5 databases (row format 2) holding the thread of
 * schema5.ts, whose rows list the channel versions they have without a
 * stored value (`absent_keys`), written by the first release of schema
 * version 5, with the journal the same saver kept. Run ONCE, by hand, and
 * commit the output:
 *
 *     npx vitest run -c test/golden/generate-schema5.config.ts
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { MemoryJournalBackend } from "../../src/journal.js";
import { readAbsentThread, writeAbsentThread } from "./schema5.js";
import { RAW_KEY, dumpDatabase, toBase64 } from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

async function writeSchema5Golden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  const saver = new IndexedDBSaver({ dbName, journal: "memory", ...(serde ? { serde } : {}) });
  await writeAbsentThread(saver);
  const expected = await readAbsentThread(saver);
  await saver.close();
  const journal = MemoryJournalBackend.file(dbName);
  if (!journal) throw new Error(`no journal was kept for ${dbName}`);
  const dump = await dumpDatabase(indexedDB, dbName);
  writeFileSync(join(here, file), JSON.stringify({ dbName, dump, journal: toBase64(journal), expected }, null, 1) + "\n");
}

it("writes the schema version 5 golden files", async () => {
  await writeSchema5Golden("saver-plain-schema5.json", "golden-plain-schema5");
  await writeSchema5Golden("saver-encrypted-schema5.json", "golden-encrypted-schema5", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
