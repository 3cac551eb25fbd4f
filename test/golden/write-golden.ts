/**
 * What the journal-keeping golden generators (generate-format1.ts,
 * generate-format1-sizes.ts, generate-format2.ts, generate-schema5.ts,
 * generate-schema6.ts)
 * share: a saver with the `"memory"` journal (which writes the same bytes as
 * `"opfs"`) fills a database, and the file beside them holds its dump, the
 * journal's bytes and what the saver answered. Node only (it writes files).
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { IndexedDBSaver } from "../../src/index.js";
import { MemoryJournalBackend } from "../../src/journal.js";
import { dumpDatabase, toBase64 } from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Writes golden `file` (in test/golden): database `dbName` filled by `fill`
 * on a saver with `serde` (the default serializer without one) and a memory
 * journal; `fill` resolves to the answers the file records as `expected`.
 */
export async function writeJournalGolden(
  file: string,
  dbName: string,
  serde: SerializerProtocol | undefined,
  fill: (saver: IndexedDBSaver) => Promise<unknown>,
): Promise<void> {
  const saver = new IndexedDBSaver({ dbName, journal: "memory", ...(serde ? { serde } : {}) });
  const expected = await fill(saver);
  await saver.close();
  const journal = MemoryJournalBackend.file(dbName);
  if (!journal) throw new Error(`no journal was kept for ${dbName}`);
  const dump = await dumpDatabase(indexedDB, dbName);
  writeFileSync(join(here, file), JSON.stringify({ dbName, dump, journal: toBase64(journal), expected }, null, 1) + "\n");
}
