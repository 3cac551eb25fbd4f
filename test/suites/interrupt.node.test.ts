/**
 * LangGraph's interrupt() in Node (AsyncLocalStorage) is the reference for
 * interruptWith: its traces are the golden file test/golden/interrupt-scenarios.json,
 * checked here against LangGraph itself (so the file cannot drift from it) and
 * against interruptWith on IndexedDBSaver, on the oldest and newest LangGraph
 * of the peer range. The browsers check interruptWith against the same file
 * (interrupt-differential.browser.test.ts). Regenerate with
 * UPDATE_INTERRUPT_GOLDEN=1 after a LangGraph upgrade changes the reference.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as latest from "@langchain/langgraph";
import { ToolNode as LatestToolNode } from "@langchain/langgraph/prebuilt";
import * as oldest from "@langchain/langgraph-1-5";
import { ToolNode as OldestToolNode } from "@langchain/langgraph-1-5/prebuilt";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { interruptWith } from "../../src/interrupt/index.js";
import { interruptIn } from "../../src/interrupt/interrupt.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { runScenarios, type ScenarioKit, type Trace } from "../support/interrupt-scenarios.js";

const goldenPath = fileURLToPath(new URL("../golden/interrupt-scenarios.json", import.meta.url));
const update = process.env.UPDATE_INTERRUPT_GOLDEN === "1";
const golden: Record<string, Record<string, Trace>> = update ? {} : JSON.parse(readFileSync(goldenPath, "utf8"));
const track = trackSavers<IndexedDBSaver>();

const releases = [
  { version: "1.7.3", lg: latest, ToolNode: LatestToolNode },
  {
    version: "1.5.0",
    lg: oldest as unknown as typeof latest,
    ToolNode: OldestToolNode as unknown as typeof LatestToolNode,
  },
];

describe.each(releases)("interrupt scenarios on LangGraph $version", ({ version, lg, ToolNode }) => {
  it("LangGraph's interrupt() on MemorySaver gives the golden traces", async () => {
    const reference = await runScenarios({
      lg,
      ToolNode,
      ask: (_config, value, options) => lg.interrupt(value, options),
      saver: () => new lg.MemorySaver(),
    });
    if (update) {
      golden[version] = reference;
      writeFileSync(goldenPath, `${JSON.stringify(golden, null, 2)}\n`);
    }
    expect(reference).toEqual(golden[version]);
  });

  it("interruptWith on IndexedDBSaver gives the same traces", async () => {
    const ask: ScenarioKit["ask"] =
      lg === latest
        ? (config, value, options) => interruptWith(config, value, options)
        : (config, value, options) => interruptIn(lg, config, value, options);
    const traces = await runScenarios({
      lg,
      ToolNode,
      ask,
      saver: () => track(new IndexedDBSaver({ dbName: freshDbName("hitl") })),
    });
    expect(traces).toEqual(golden[version]);
  });
});
