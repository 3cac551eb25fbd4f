/**
 * interruptWith in a real browser (Chromium, Firefox) on IndexedDBSaver gives
 * the traces LangGraph's own interrupt() gives in Node on AsyncLocalStorage:
 * the golden file interrupt.node.test.ts checks against LangGraph itself. On
 * the oldest (1.5.0) and newest LangGraph of the peer range.
 */
import * as latest from "@langchain/langgraph/web";
import { ToolNode as LatestToolNode } from "@langchain/langgraph/prebuilt";
import * as oldest from "@langchain/langgraph-1-5/web";
import { ToolNode as OldestToolNode } from "@langchain/langgraph-1-5/prebuilt";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { interruptWith } from "../../src/interrupt/index.js";
import { interruptIn } from "../../src/interrupt/interrupt.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { runScenarios, type ScenarioKit } from "../support/interrupt-scenarios.js";
import golden from "../golden/interrupt-scenarios.json";

const track = trackSavers<IndexedDBSaver>();

describe("interruptWith in the browser equals LangGraph's interrupt() in Node", () => {
  it("on LangGraph 1.7.3", async () => {
    const ask: ScenarioKit["ask"] = (config, value, options) => interruptWith(config, value, options);
    const saver = () => track(new IndexedDBSaver({ dbName: freshDbName("hitl") }));
    expect(await runScenarios({ lg: latest, ToolNode: LatestToolNode, ask, saver })).toEqual(golden["1.7.3"]);
  });

  it("on LangGraph 1.5.0", async () => {
    const lg = oldest as unknown as typeof latest;
    const ask: ScenarioKit["ask"] = (config, value, options) => interruptIn(lg, config, value, options);
    const saver = () => track(new IndexedDBSaver({ dbName: freshDbName("hitl") }));
    const ToolNode = OldestToolNode as unknown as typeof LatestToolNode;
    expect(await runScenarios({ lg, ToolNode, ask, saver })).toEqual(golden["1.5.0"]);
  });
});
