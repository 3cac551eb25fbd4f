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
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer } from "../../src/index.js";
import { readAbsentThread, writeAbsentThread } from "./schema5.js";
import { RAW_KEY } from "./shared.js";
import { writeJournalGolden } from "./write-golden.js";

/** Writes one golden file (see write-golden.ts). */
function writeSchema5Golden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  return writeJournalGolden(file, dbName, serde, async (saver) => {
    await writeAbsentThread(saver);
    return readAbsentThread(saver);
  });
}

it("writes the schema version 5 golden files", async () => {
  await writeSchema5Golden("saver-plain-schema5.json", "golden-plain-schema5");
  await writeSchema5Golden("saver-encrypted-schema5.json", "golden-encrypted-schema5", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
