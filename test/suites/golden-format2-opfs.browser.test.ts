/**
 * The journals of the row format 2 golden databases, in the OPFS journal
 * (test/golden/saver-plain-format2.json and test/golden/saver-encrypted-format2.json):
 * the bytes their savers kept, written into the files `journal: "opfs"`
 * reads, restore an emptied database to every recorded answer. The memory
 * backend's replay is golden-format2.test.ts's; this is the same file
 * through OPFS and its worker (test/support/opfs-golden.ts). Chromium.
 */
import { readFormat2 } from "../golden/format2.js";
import encryptedGolden from "../golden/saver-encrypted-format2.json";
import plainGolden from "../golden/saver-plain-format2.json";
import { describeOpfsGolden } from "../support/opfs-golden.js";

describeOpfsGolden("row format 2", { plain: plainGolden, encrypted: encryptedGolden }, readFormat2);
