/**
 * The official LangGraph.js conformance suite against the PGlite peer, in
 * Node on in-memory PGlite: `npm run bench -- pglite-conformance`. With
 * PEERS_PGLITE_RAW=1 it runs the saver as published (no serializer adapter),
 * which shows where LangGraph 1.x breaks it.
 */
import { validate } from "@langchain/langgraph-checkpoint-validation";
import type { PgLiteSaver } from "@steerprotocol/langgraph-checkpoint-pglite";
import { pgliteSaver } from "./pglite.js";

const adapted = process.env.PEERS_PGLITE_RAW !== "1";

validate({
  checkpointerName: adapted ? "PgLiteSaver (sync-dumps adapter)" : "PgLiteSaver (as published)",
  createCheckpointer: () => pgliteSaver("memory://", adapted),
  destroyCheckpointer: async (saver: PgLiteSaver) => saver.end(),
});
