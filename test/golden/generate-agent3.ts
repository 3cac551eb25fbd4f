/**
 * Writes `agent-schema3.json`: the local agent server's own database
 * (`<saver dbName>-agent-threads`) at schema version 3 (its steps 1 to 3:
 * threads, runs by thread, run events, leftover threads), frozen before step
 * 4 indexed runs by status, holding the content of agent-database.ts, +
 * every answer recorded. Run ONCE, by hand, and commit the output:
 *
 *     npx vitest run -c test/golden/generate-agent3.config.ts
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "vitest";
import { readAgentDatabase, writeAgentDatabase } from "./agent-database.js";
import { dumpDatabase } from "./shared.js";

const here = dirname(fileURLToPath(import.meta.url));

it("writes the agent database golden of schema version 3", async () => {
  const dbName = "golden-agent-schema3";
  await writeAgentDatabase(dbName);
  const expected = await readAgentDatabase(dbName);
  const dump = await dumpDatabase(indexedDB, dbName);
  writeFileSync(join(here, "agent-schema3.json"), JSON.stringify({ dbName, dump, expected }, null, 1) + "\n");
});
