/**
 * The official LangGraph.js conformance suite against the sqlite-wasm peer,
 * in Chromium through Vitest browser mode (its worker needs a browser):
 * `npm run bench -- sqlite-conformance`. Each checkpointer is a new worker on
 * an OPFS pool of its own, dropped after its tests. Vitest's browser context
 * is off the record (OPFS calls go through IPC there): this checks behaviour,
 * not speed.
 */
import { validate } from "@langchain/langgraph-checkpoint-validation";
import { SqliteWasmSaver } from "./sqlite.js";

let next = 0;

validate({
  checkpointerName: "SqliteWasmSaver (bench peer)",
  createCheckpointer: () => SqliteWasmSaver.open(`/conformance-${Date.now()}-${next++}`),
  destroyCheckpointer: (saver: SqliteWasmSaver) => saver.close(true),
});
