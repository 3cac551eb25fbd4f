/**
 * Writes `saver-plain-schema3.json` and `saver-encrypted-schema3.json`:
 * IndexedDBSaver databases at schema version 3 (the layout of SAVER_UPGRADES
 * steps 1 to 3: split rows, a blob per channel version, the `list` indexes),
 * plain and encrypted (row binding version 3), with every read recorded:
 * the previous schema that a new row layout (issue 13) must open, read and
 * upgrade. Run ONCE, by hand, and commit the output:
 *
 *     npx vitest run -c test/golden/generate-schema3.config.ts
 */
import { it } from "vitest";
import { writeEncryptedSaverGolden, writeSaverGolden } from "./saver-golden.js";

it("writes the schema version 3 golden files", async () => {
  await writeSaverGolden("saver-plain-schema3.json", "golden-plain-schema3");
  await writeEncryptedSaverGolden("saver-encrypted-schema3.json", "golden-encrypted-schema3");
}, 120_000);
