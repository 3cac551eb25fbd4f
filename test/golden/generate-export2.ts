/**
 * Writes `export-v2.json`: a `.lgthread` file of export format version 2
 * (records sealed with an `EncryptedSerializer` and bound to the file and
 * their place; issue 11 item 6), exported by an encrypted IndexedDBSaver
 * from the golden thread with the fixed inputs of export2.ts, and what
 * importing it gives. Also the same saver's `unencrypted: true` export
 * (format version 1): recorded only if its bytes differ from export.json.
 * Run ONCE, by hand, and commit the output (the other golden files are
 * never rewritten):
 *
 *     npx vitest run -c test/golden/generate-export2.config.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "vitest";
import { EncryptedSerializer, IndexedDBSaver, importThread } from "../../src/index.js";
import { RAW_KEY, comparable, hex, toBase64, writeGoldenThread } from "./shared.js";
import { withFixedInputs } from "./export2.js";

const here = dirname(fileURLToPath(import.meta.url));

it("writes the export format version 2 golden file", async () => {
  const saver = new IndexedDBSaver({ dbName: "golden-export2", serde: await EncryptedSerializer.fromRawKey(RAW_KEY) });
  await writeGoldenThread(saver);
  await saver.getTuple({ configurable: { thread_id: "t-golden" } }); // open before faking Date
  const file = await withFixedInputs(() => saver.exportThread("t-golden", { as: "bytes" }));
  const plain = await withFixedInputs(() => saver.exportThread("t-golden", { as: "bytes", unencrypted: true }));
  await saver.close();

  const target = new IndexedDBSaver({ dbName: "golden-export2-import" });
  const importResult = comparable(
    await importThread(target, file, { serde: await EncryptedSerializer.fromRawKey(RAW_KEY) }),
  );
  const listed: unknown[] = [];
  for await (const tuple of target.list({ configurable: { thread_id: "t-golden" } })) listed.push(tuple);
  await target.close();

  const v1 = JSON.parse(readFileSync(join(here, "export.json"), "utf8")) as { file: string };
  const unencryptedIsExportJson = hex(plain) === hex(Uint8Array.from(atob(v1.file), (c) => c.charCodeAt(0)));
  const out = {
    file: toBase64(file),
    importResult,
    indexeddb: comparable(listed),
    unencrypted: unencryptedIsExportJson ? { sameAsExportJson: true } : { sameAsExportJson: false, file: toBase64(plain) },
  };
  writeFileSync(join(here, "export-v2.json"), JSON.stringify(out, null, 1) + "\n");
}, 120_000);
