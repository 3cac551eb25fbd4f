/**
 * The journals of the row format 1 golden databases, in the OPFS journal
 * (test/golden/saver-plain-format1.json and test/golden/saver-encrypted-format1.json):
 * the bytes their savers kept, written into the files `journal: "opfs"`
 * reads, restore an emptied database to every recorded answer. The memory
 * backend's replay is golden-format1.test.ts's; this is the same file
 * through OPFS and its worker (test/support/opfs-golden.ts). Chromium.
 */
import { readFormat1Extras } from "../golden/format1.js";
import encryptedGolden from "../golden/saver-encrypted-format1.json";
import plainGolden from "../golden/saver-plain-format1.json";
import { readSaver } from "../golden/shared.js";
import { describeOpfsGolden } from "../support/opfs-golden.js";

describeOpfsGolden("row format 1", { plain: plainGolden, encrypted: encryptedGolden }, async (saver) => ({
  ...(await readSaver(saver)),
  ...(await readFormat1Extras(saver)),
}));
