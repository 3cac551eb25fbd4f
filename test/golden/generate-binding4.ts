/**
 * Writes `saver-encrypted-binding4.json`: an encrypted IndexedDBSaver
 * database whose checkpoint rows carry row binding version 4 (a clear
 * `parent_writes`, the keys of the parent's pending writes, hashed into
 * each row's `chain`: src/saver/chain.ts; issue 23, finding 8), with every
 * read recorded. Run ONCE, by hand, and commit the output (the other golden
 * files are never rewritten):
 *
 *     npx vitest run -c test/golden/generate-binding4.config.ts
 */
import { it } from "vitest";
import { writeEncryptedSaverGolden } from "./saver-golden.js";

it("writes the binding version 4 golden file", () =>
  writeEncryptedSaverGolden("saver-encrypted-binding4.json", "golden-encrypted-binding4"), 120_000);
