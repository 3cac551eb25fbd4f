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
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer } from "../../src/index.js";
import { writeSizesThread } from "./format1-sizes.js";
import { readFormat2, writeInlineThread } from "./format2.js";
import { RAW_KEY } from "./shared.js";
import { writeJournalGolden } from "./write-golden.js";

/** Writes one golden file (see write-golden.ts). */
function writeFormat2Golden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  return writeJournalGolden(file, dbName, serde, async (saver) => {
    await writeSizesThread(saver);
    await writeInlineThread(saver);
    return readFormat2(saver);
  });
}

it("writes the row format 2 golden files", async () => {
  await writeFormat2Golden("saver-plain-format2.json", "golden-plain-format2");
  await writeFormat2Golden("saver-encrypted-format2.json", "golden-encrypted-format2", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
