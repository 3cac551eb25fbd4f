/**
 * Writes `saver-encrypted-binding3.json`: an encrypted IndexedDBSaver
 * database whose checkpoint rows carry row binding version 3 (a clear
 * `chain`, the hash chain of parent links, also sealed with each
 * checkpoint: src/saver/chain.ts; issue 11), with every read recorded.
 * Run ONCE, by hand, and commit the output (the other golden files are
 * never rewritten):
 *
 *     npx vitest run -c test/golden/generate-binding3.config.ts
 */
import { it } from "vitest";
import { writeEncryptedSaverGolden } from "./saver-golden.js";

it("writes the binding version 3 golden file", () =>
  writeEncryptedSaverGolden("saver-encrypted-binding3.json", "golden-encrypted-binding3"), 120_000);
