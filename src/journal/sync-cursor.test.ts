/**
 * Sync's pull cursor (a `meta` row) and a restore from the journal, beside a
 * tab writing without it (docs/journal.md): a replay leaves the database the
 * cursor it holds, so the next pull brings again what the journal may lack;
 * a snapshot's cursor, read with every row it covers, comes back with them.
 * Memory backend, so it runs the same in Node and Chromium; the round with a
 * real server is in src/sync/journal.node.test.ts.
 */
import { afterEach, expect, it } from "vitest";
import { rawAccessOf } from "../saver/raw-access.js";
import type { IndexedDBSaver } from "../saver/index.js";
import { readSyncState, updateSyncState } from "../sync/state.js";
import type { RecoveryReport } from "./index.js";
import {
  config,
  dbName,
  deleteDb,
  removeJournalTestData,
  saver,
  tickGraph,
} from "../../test/support/journal-savers.js";

afterEach(removeJournalTestData);

const SCOPE = "https://sync.example\u0000user";

/** Runs a graph on `threadId`, then moves the pull cursor to `cursor`, as a pull of that thread leaves them. */
async function pulled(into: IndexedDBSaver, threadId: string, cursor: number): Promise<void> {
  await tickGraph(into, 2).invoke({ count: 0 }, config(threadId));
  await rawAccessOf(into)!.write(["meta"], (tx) => updateSyncState(tx, SCOPE, [], cursor), "move the cursor");
}

/** Two tabs on one database, the first journaling; the second's pull (thread "b") is not in the journal. */
async function twoTabs(name: string): Promise<IndexedDBSaver> {
  const journaling = saver(name);
  await journaling.recovery(); // it holds the journal
  const other = saver(name, { journal: "off" });
  await pulled(journaling, "a", 3);
  await pulled(other, "b", 5);
  await other.close();
  await pulled(journaling, "c", 9); // journaled: a cursor past "b" too
  return journaling;
}

const cursorOf = async (reader: IndexedDBSaver) => (await readSyncState(rawAccessOf(reader)!, SCOPE)).cursor;

it("a restore after a wipe puts back no cursor past rows the journal lacks: the next pull starts over", async () => {
  const name = dbName();
  await (await twoTabs(name)).close();
  await deleteDb(name); // Chromium deleting a corrupted database
  const reports: RecoveryReport[] = [];
  const restored = saver(name, {}, reports);
  expect((await restored.getTuple(config("c")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
  expect(await restored.getTuple(config("b"))).toBeUndefined(); // never journaled
  expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
  // Before, 9: every later pull started after "b", whose rows this device then never got back.
  expect(await cursorOf(restored)).toBe(0);
  await restored.close();
});

it("a snapshot's cursor comes back with the rows it covers", async () => {
  const name = dbName();
  const journaling = await twoTabs(name);
  await journaling.compactJournal(); // a snapshot of the database: "b" and the cursor past it
  await journaling.close();
  await deleteDb(name);
  const restored = saver(name);
  expect((await restored.getTuple(config("b")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
  expect(await cursorOf(restored)).toBe(9);
  await restored.close();
});
