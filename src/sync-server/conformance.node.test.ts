/**
 * The official LangGraph.js conformance suite against SyncServerSaver (the
 * server-side agent's saver on the sync tables), on the real PostgreSQL:
 * each checkpointer is a fresh user, so the suites never see each other.
 */
import { validate } from "@langchain/langgraph-checkpoint-validation";
import pg from "pg";
import { SyncServerSaver } from "./saver.js";
import { setupSchema } from "./schema.js";
import { newUser, postgresUrl } from "../../test/support/sync/harness.js";

let pool: pg.Pool | undefined;

validate({
  checkpointerName: "SyncServerSaver",
  beforeAll: async () => {
    pool = new pg.Pool({ connectionString: await postgresUrl(), max: 4 });
    await setupSchema(pool);
  },
  afterAll: async () => {
    await pool?.end();
  },
  createCheckpointer: () => new SyncServerSaver(pool!, newUser("conformance").user),
});
