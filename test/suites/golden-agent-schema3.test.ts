/**
 * The agent server's database golden of schema version 3
 * (test/golden/agent-schema3.json, written once by
 * test/golden/generate-agent3.ts): threads, runs of every status with their
 * events, a leftover thread. It loads exactly as dumped, the current code
 * opens it (running any later schema step) and keeps every record, and its
 * classes answer as recorded. A later version must still pass this file.
 * Node, Chromium and Firefox (vitest.firefox.config.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { readAgentDatabase } from "../golden/agent-database.js";
import golden from "../golden/agent-schema3.json";
import {
  dumpDatabase,
  expectAnswers,
  loadDatabase,
  schemaOf,
  type DatabaseDump,
  type Tagged,
} from "../golden/shared.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";

const dump = golden.dump as unknown as DatabaseDump;
const expected = golden.expected as unknown as Record<string, Tagged>;

/** Schema version 3 of the agent database, frozen: steps 1 to 3 of src/agent-server/schema.ts. */
const AGENT_SCHEMA_3 = {
  version: 3,
  stores: [
    { name: "leftover_threads", keyPath: "thread_id", autoIncrement: false, indexes: [] },
    { name: "run_events", keyPath: ["run_id", "id"], autoIncrement: false, indexes: [] },
    {
      name: "runs",
      keyPath: "run_id",
      autoIncrement: false,
      indexes: [{ name: "thread_id", keyPath: "thread_id", unique: false, multiEntry: false }],
    },
    {
      name: "threads",
      keyPath: "thread_id",
      autoIncrement: false,
      indexes: [{ name: "seq", keyPath: "seq", unique: false, multiEntry: false }],
    },
  ],
};

/** Schema version 4: step 4 indexes runs by status (`runs.cancelMany` by status). */
const AGENT_SCHEMA_4 = {
  version: 4,
  stores: AGENT_SCHEMA_3.stores.map((store) =>
    store.name === "runs"
      ? {
          ...store,
          indexes: [{ name: "status", keyPath: "status", unique: false, multiEntry: false }, ...store.indexes],
        }
      : store,
  ),
};

/** The schema the current code opens the golden at. */
const CURRENT_SCHEMA = AGENT_SCHEMA_4;

const opened: string[] = [];
afterEach(async () => {
  for (const name of opened.splice(0)) await deleteDatabase(name);
});

/** The golden loaded as dumped under a fresh name. */
async function loaded(): Promise<string> {
  const name = freshDbName("golden-agent3");
  opened.push(name);
  await loadDatabase(indexedDB, name, dump);
  return name;
}

describe("agent server database of schema version 3", () => {
  it("is schema version 3 and loads exactly as dumped", async () => {
    expect(schemaOf(dump)).toEqual(AGENT_SCHEMA_3);
    expect(await dumpDatabase(indexedDB, await loaded())).toEqual(dump);
  });

  it("opens with the current code, keeping every record, and answers as recorded", async () => {
    const name = await loaded();
    expectAnswers(await readAgentDatabase(name), expected);
    const after = await dumpDatabase(indexedDB, name);
    expect(schemaOf(after)).toEqual(CURRENT_SCHEMA);
    expect(after.stores.map((store) => [store.name, store.records])).toEqual(
      dump.stores.map((store) => [store.name, store.records]),
    );
    // Read again once upgraded: the same answers.
    expectAnswers(await readAgentDatabase(name), expected);
  });
});
