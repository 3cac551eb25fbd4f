/**
 * The format-1 golden databases (test/golden/saver-plain-format1.json and
 * test/golden/saver-encrypted-format1.json), rows
 * then altered by someone who can edit the profile's files, met by `prune`
 * of the golden chat (whose newest checkpoint rebuilds a delta channel from
 * its ancestors' writes). Each alteration is refused with a package error
 * naming the row, nothing deleted; before the fixes:
 *
 * - without encryption, the newest checkpoint's channel versions removed:
 *   "Cannot read properties of null (reading 'messages')" from prune
 *   (every read already said the row was altered);
 * - with encryption, a checkpoint's clear `chain` edited to a bigint or a
 *   cyclic object (IndexedDB stores both): "Do not know how to serialize a
 *   BigInt" or "Converting circular structure to JSON" from the hash of its
 *   child's chain, instead of the walk failing closed.
 *
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { DecryptionError, SerializationError, type IndexedDBCheckpointError } from "../../src/core/errors.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { journalGoldenCases, journalGoldenSavers } from "../golden/journal-goldens.js";
import encryptedGolden from "../golden/saver-encrypted-format1.json";
import plainGolden from "../golden/saver-plain-format1.json";
import { committed, done, openRaw, scanAll } from "../support/reliability/raw.js";

const savers = journalGoldenSavers("golden-format1-altered");
const [plain, encrypted] = journalGoldenCases(plainGolden, encryptedGolden);
const CHAT = "t-chat";

interface Row {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  [field: string]: unknown;
}

/** The golden loaded, the row `pick` chooses among the chat's root checkpoints (oldest first) edited; a saver on it. */
async function altered(
  testCase: typeof plain,
  pick: (rows: Row[]) => Row,
  fields: Record<string, unknown>,
): Promise<{ saver: IndexedDBSaver; row: Row }> {
  const loaded = await savers.open(testCase);
  const name = loaded.dbName;
  await loaded.close();
  const db = await openRaw(name);
  let row: Row;
  try {
    const tx = db.transaction(["checkpoints"], "readwrite");
    const store = tx.objectStore("checkpoints");
    const rows = ((await done(store.getAll())) as Row[]).filter((r) => r.thread_id === CHAT && r.checkpoint_ns === "");
    row = pick(rows);
    store.put({ ...row, ...fields });
    await committed(tx);
  } finally {
    db.close();
  }
  return { saver: new IndexedDBSaver({ dbName: name, serde: await testCase!.serde() }), row };
}

async function expectPruneRefused(saver: IndexedDBSaver, kind: typeof IndexedDBCheckpointError, row: Row) {
  const before = await scanAll(saver.dbName);
  const error = await saver.prune([CHAT]).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, String(error)).toBeInstanceOf(kind);
  expect((error as Error).message).toContain(`"${CHAT}"`);
  expect((error as Error).message).toMatch(/altered outside the saver/);
  expect((error as Error).message).toContain(row.checkpoint_id);
  await saver.close();
  expect(await scanAll(saver.dbName)).toEqual(before);
}

describe("a format-1 golden database altered, then pruned", () => {
  it("without encryption, the newest checkpoint's channel versions removed: a SerializationError naming it, nothing deleted", async () => {
    for (const versions of [null, undefined]) {
      const { saver, row } = await altered(plain!, (rows) => rows.at(-1)!, { channel_versions: versions });
      await expectPruneRefused(saver, SerializationError, row);
    }
  });

  it("with encryption, a checkpoint's clear chain edited to a bigint or a cyclic object: a DecryptionError naming its child, nothing deleted", async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const chain of [5n, cyclic]) {
      // The parent of the newest: the newest's chain hashes it.
      const { saver, row } = await altered(encrypted!, (rows) => rows.at(-2)!, { chain });
      const rows = (await scanAll(saver.dbName)).checkpoints as Row[];
      const child = rows.find((r) => r.parent_checkpoint_id === row.checkpoint_id && r.thread_id === CHAT)!;
      await expectPruneRefused(saver, DecryptionError, child);
    }
  });
});
