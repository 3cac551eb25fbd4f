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
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer } from "../../src/index.js";
import { readSizesThread, writeSizesThread } from "./format1-sizes.js";
import { RAW_KEY } from "./shared.js";
import { writeJournalGolden } from "./write-golden.js";

/** Writes one golden file (see write-golden.ts). */
function writeSizesGolden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  return writeJournalGolden(file, dbName, serde, async (saver) => {
    await writeSizesThread(saver);
    return readSizesThread(saver);
  });
}

it("writes the row format 1 size golden files", async () => {
  await writeSizesGolden("saver-plain-format1-sizes.json", "golden-plain-format1-sizes");
  await writeSizesGolden("saver-encrypted-format1-sizes.json", "golden-encrypted-format1-sizes", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
