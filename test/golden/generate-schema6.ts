/**
 * Writes `saver-plain-schema6.json` and `saver-encrypted-schema6.json`:
 * schema version 6 databases (row format 2, before schema step 7) holding
 * the thread of schema6.ts, whose checkpoints name values their ancestors
 * hold inline (found through `by_value`), and the thread of schema5.ts,
 * written by the last release of schema version 6, with the journal the
 * same saver kept. Run ONCE, by hand, and commit the output:
 *
 *     npx vitest run -c test/golden/generate-schema6.config.ts
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer } from "../../src/index.js";
import { readAbsentThread, writeAbsentThread } from "./schema5.js";
import { readCarriedThread, writeCarriedThread } from "./schema6.js";
import { RAW_KEY } from "./shared.js";
import { writeJournalGolden } from "./write-golden.js";

/** Writes one golden file (see write-golden.ts). */
function writeSchema6Golden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  return writeJournalGolden(file, dbName, serde, async (saver) => {
    await writeCarriedThread(saver);
    await writeAbsentThread(saver);
    return { ...(await readCarriedThread(saver)), ...(await readAbsentThread(saver)) };
  });
}

it("writes the schema version 6 golden files", async () => {
  await writeSchema6Golden("saver-plain-schema6.json", "golden-plain-schema6");
  await writeSchema6Golden("saver-encrypted-schema6.json", "golden-encrypted-schema6", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
