/**
 * Writes `export-paths.json`: the golden thread exported by an encrypted
 * IndexedDBSaver (format version 2) and with `unencrypted: true` (version 1),
 * each with the ancillary task paths frame (`p`) that export writes from the
 * release that added it, and the task path of every pending write the files
 * hold, as an import stores them. With the fixed inputs of export2.ts.
 * Run ONCE, by hand, and commit the output (golden files are never rewritten):
 *
 *     npx vitest run -c test/golden/generate-export-paths.config.ts
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "vitest";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { RAW_KEY, toBase64, writeGoldenThread } from "./shared.js";
import { exportFrames, withFixedInputs } from "./export2.js";
import { storedTaskPaths } from "./export-paths.js";

const here = dirname(fileURLToPath(import.meta.url));

it("writes the task paths golden file", async () => {
  const saver = new IndexedDBSaver({
    dbName: "golden-export-paths",
    serde: await EncryptedSerializer.fromRawKey(RAW_KEY),
  });
  await writeGoldenThread(saver);
  await saver.getTuple({ configurable: { thread_id: "t-golden" } }); // open before faking Date
  const file = await withFixedInputs(() => saver.exportThread("t-golden", { as: "bytes" }));
  const plain = await withFixedInputs(() => saver.exportThread("t-golden", { as: "bytes", unencrypted: true }));
  await saver.close();
  for (const bytes of [file, plain]) {
    if (exportFrames(bytes).at(-2)?.[0] !== "p") throw new Error("the export holds no task paths frame");
  }
  const out = {
    file: toBase64(file),
    unencrypted: toBase64(plain),
    taskPaths: await storedTaskPaths("golden-export-paths"),
  };
  writeFileSync(join(here, "export-paths.json"), JSON.stringify(out, null, 1) + "\n");
}, 120_000);
