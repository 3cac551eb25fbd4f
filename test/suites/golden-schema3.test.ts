/**
 * The golden databases of schema version 3 (test/golden/saver-plain-schema3.json
 * and test/golden/saver-encrypted-schema3.json, written once by
 * test/golden/generate-schema3.ts): today's layout, frozen before a new row
 * layout (issue 13) changes it. Each loads at version 3 exactly as dumped,
 * opens with today's code, reads back every recorded answer, keeps every
 * record as it was, and takes new checkpoints on top. A later schema must
 * still pass this file: that is its upgrade test. Node and Chromium.
 */
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import encryptedGolden from "../golden/saver-encrypted-schema3.json";
import plainGolden from "../golden/saver-plain-schema3.json";
import {
  RAW_KEY,
  SAVER_SCHEMA_3,
  expectAnswers,
  schemaOf,
  deleteDatabase,
  loadDatabase,
  readSaver,
  type SaverGolden,
} from "../golden/shared.js";
import { expectPutOnTopOfChat, expectRecordsKept } from "../golden/saver-checks.js";
import { freshDbName } from "../support/databases.js";

const cases = [
  { name: "plain (MsgpackSerializer)", golden: plainGolden as unknown as SaverGolden, serde: async () => undefined },
  {
    name: "encrypted (EncryptedSerializer.fromRawKey)",
    golden: encryptedGolden as unknown as SaverGolden,
    serde: () => EncryptedSerializer.fromRawKey(RAW_KEY),
  },
];

const created: string[] = [];
const savers: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const saver of savers.splice(0)) await saver.close();
  for (const name of created.splice(0)) await deleteDatabase(indexedDB, name);
});

describe.each(cases)("saver database of schema version 3: $name", ({ golden, serde }) => {
  /** A saver on a fresh database loaded from the golden dump. */
  async function open(): Promise<IndexedDBSaver> {
    const name = freshDbName("golden-schema3");
    created.push(name);
    await loadDatabase(indexedDB, name, golden.dump);
    const saver = new IndexedDBSaver({ dbName: name, serde: await serde() });
    savers.push(saver);
    return saver;
  }

  it("has the layout of schema version 3", () => {
    expect(schemaOf(golden.dump)).toEqual(SAVER_SCHEMA_3);
  });

  it("reads back every checkpoint, pending write, delta history and thread as recorded", async () => {
    expectAnswers(await readSaver(await open()), golden.expected);
  });

  it("keeps every record as it was once opened and read", async () => {
    const saver = await open();
    await readSaver(saver);
    await saver.close();
    await expectRecordsKept(saver.dbName, golden.dump);
  });

  it("takes a new checkpoint on top of the stored chat, and walks and lists across old and new rows", async () => {
    await expectPutOnTopOfChat(await open());
  });
});
