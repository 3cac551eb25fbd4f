/**
 * The official LangGraph.js conformance suite (`validate()`, 718 tests) and
 * the opt-in delta-channel history suite, against IndexedDBSaver: in Node on
 * fake-indexeddb and in Chromium on the real IndexedDB (this file runs in both
 * Vitest projects). Each checkpointer gets a database of its own.
 */
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { freshDbName, deleteDatabase } from "../support/databases.js";

const initializer = {
  checkpointerName: "IndexedDBSaver",
  createCheckpointer: () => new IndexedDBSaver({ dbName: freshDbName("conformance") }),
  destroyCheckpointer: async (saver: IndexedDBSaver) => {
    await saver.close();
    await deleteDatabase(saver.dbName);
  },
};

validate(initializer);
deltaChannelHistoryTests(initializer);
