/**
 * The schema version 6 goldens (test/golden/saver-plain-schema6.json and
 * test/golden/saver-encrypted-schema6.json, written once by
 * test/golden/generate-schema6.ts): checkpoints naming values their
 * ancestors hold inline, each such row listing them in `inline_keys` (found
 * through `by_value`), carried over one and several steps, in a subgraph
 * namespace, on a fork and after the holding row's run was removed. Each
 * loads exactly as dumped, reads back as recorded, keeps every record,
 * restores from its journal alone, takes new checkpoints on top (their
 * values read back, then again once the run holding them is removed), and
 * the code of schema steps 1-5 refuses it as written by a newer version. A
 * later version must still pass this file. Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import type { IndexedDBSaver } from "../../src/index.js";
import { readAbsentThread } from "../golden/schema5.js";
import { CARRIED_THREAD, readCarriedThread } from "../golden/schema6.js";
import { journalGoldenCases, journalGoldenSavers } from "../golden/journal-goldens.js";
import encryptedGolden from "../golden/saver-encrypted-schema6.json";
import plainGolden from "../golden/saver-plain-schema6.json";
import { expectRecordsKept, expectRefusedByOlderCode } from "../golden/saver-checks.js";
import { SAVER_SCHEMA_6, checkpointId, expectAnswers, schemaOf, type Tagged } from "../golden/shared.js";

const savers = journalGoldenSavers("golden-schema6");

/** Every answer the goldens record. */
async function readAll(saver: IndexedDBSaver): Promise<Record<string, Tagged>> {
  return { ...(await readCarriedThread(saver)), ...(await readAbsentThread(saver)) };
}

/**
 * Puts children on top of the stored 83 (changing nothing) and 84 (changing
 * a), then checks their values, before and after the run that wrote the
 * rows holding most of them is removed.
 */
async function expectPutsOnTop(saver: IndexedDBSaver): Promise<void> {
  const at = (n: number) => ({
    configurable: { thread_id: CARRIED_THREAD, checkpoint_ns: "", checkpoint_id: checkpointId(n) },
  });
  const meta = { source: "update", step: 9, parents: {}, run_id: "run-on-top" } as const;
  const values = async (n: number) => (await saver.getTuple(at(n)))?.checkpoint.channel_values;
  const on83 = (await saver.getTuple(at(83)))!.checkpoint;
  const on84 = (await saver.getTuple(at(84)))!.checkpoint;
  await saver.put(at(83), { ...on83, id: checkpointId(90) }, meta, {});
  const next = { ...on84, id: checkpointId(91) };
  next.channel_values = { ...on84.channel_values, a: "a on top" };
  next.channel_versions = { ...on84.channel_versions, a: 5 };
  await saver.put(at(84), next, meta, { a: 5 });
  const c91 = { ...on84.channel_values, a: "a on top" };
  expect(await values(90)).toEqual(on83.channel_values);
  expect(await values(91)).toEqual(c91);
  // Their own run stays; the rows holding a, b, c inline (81, 82, 84) go.
  await saver.deleteForRuns(["run-main", "run-fork"], { threadId: CARRIED_THREAD });
  expect(await values(90)).toEqual(on83.channel_values);
  expect(await values(91)).toEqual(c91);
}

describe.each(journalGoldenCases(plainGolden, encryptedGolden))(
  "saver database of schema version 6: $name",
  (testCase) => {
    const { golden } = testCase;
    const expected = golden.expected as unknown as Record<string, Tagged>;

    it("is schema version 6, row format 2, its rows listing the values they hold inline", () => {
      expect(schemaOf(golden.dump)).toEqual(SAVER_SCHEMA_6);
      expect(golden.dump.stores.find((s) => s.name === "meta")!.records).toContainEqual([
        "format",
        { name: "format", value: 2 },
      ]);
      const rows = golden.dump.stores.find((s) => s.name === "checkpoints")!.records;
      for (const [, row] of rows) {
        const { inline, inline_keys } = row as { inline?: Record<string, unknown>; inline_keys?: Tagged[][] };
        expect((inline_keys ?? []).map((key) => key[2]).sort()).toEqual(Object.keys(inline ?? {}).sort());
      }
    });

    it("reads back every answer as recorded and keeps every record", async () => {
      const saver = await savers.open(testCase);
      expectAnswers(await readAll(saver), expected);
      await saver.close();
      await expectRecordsKept(saver.dbName, golden.dump);
    });

    it("takes checkpoints on top whose values read back, also once the rows holding them go", async () => {
      await expectPutsOnTop(await savers.open(testCase));
    });

    it("restores an emptied database from its journal alone, to the same answers", async () => {
      const saver = await savers.fromJournal(testCase);
      expectAnswers(await readAll(saver), expected);
    });

    it("is refused by the code of schema steps 1-5 as written by a newer version", async () => {
      await expectRefusedByOlderCode(golden.dump, 5);
    });
  },
);
