/**
 * Writes `saver-plain-format1.json` and `saver-encrypted-format1.json`: the
 * last databases of row format 1 (`meta` "format" 1, schema version 3: a
 * checkpoint row, a blob per channel version, a pending-write row per write,
 * a thread summary rewritten at each root put), written by the code of the
 * day before a new row format, with the journal the same saver kept beside
 * them (the `"memory"` backend writes the same bytes as `"opfs"`). Beyond the
 * schema version 3 files: a pruned delta thread and checkpoints removed by
 * `deleteForRuns` (the `removed` records in `meta`), and the journal. Run
 * ONCE, by hand, and commit the output:
 *
 *     npx vitest run -c test/golden/generate-format1.config.ts
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { EncryptedSerializer } from "../../src/index.js";
import { readFormat1Extras, writeRunsThread } from "./format1.js";
import { writeSaverScenario } from "./saver-golden.js";
import { RAW_KEY, readSaver } from "./shared.js";
import { writeJournalGolden } from "./write-golden.js";

/** Writes one golden file (see write-golden.ts). */
function writeFormat1Golden(file: string, dbName: string, serde?: SerializerProtocol): Promise<void> {
  return writeJournalGolden(file, dbName, serde, async (saver) => {
    await writeSaverScenario(saver);
    await writeRunsThread(saver);
    return { ...(await readSaver(saver)), ...(await readFormat1Extras(saver)) };
  });
}

it("writes the row format 1 golden files", async () => {
  await writeFormat1Golden("saver-plain-format1.json", "golden-plain-format1");
  await writeFormat1Golden("saver-encrypted-format1.json", "golden-encrypted-format1", await EncryptedSerializer.fromRawKey(RAW_KEY));
}, 120_000);
