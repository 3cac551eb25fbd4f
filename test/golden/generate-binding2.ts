/**
 * Writes `saver-encrypted-binding2.json`: an encrypted IndexedDBSaver
 * database whose checkpoints and writes are sealed under row binding
 * version 2 (a checkpoint's parent link, a write's channel and task path
 * inside the associated data; issue 11 item 2), with every read recorded.
 * Run ONCE, by hand, and commit the output (the other golden files are
 * generate.ts's and are never rewritten). Ran at commit 226e8e7: the code
 * now writes version 3 rows, so running it again would not write version 2:
 *
 *     npx vitest run -c test/golden/generate-binding2.config.ts
 */
import { it } from "vitest";
import { writeEncryptedSaverGolden } from "./saver-golden.js";

it("writes the binding version 2 golden file", () =>
  writeEncryptedSaverGolden("saver-encrypted-binding2.json", "golden-encrypted-binding2"), 120_000);
