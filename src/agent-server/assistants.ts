/**
 * The assistants routes, read only: one assistant per served graph, named by
 * the graph's name (the `assistant_id` a run is asked with), as the Agent
 * Server makes each graph's default assistant (metadata `created_by:
 * "system"`, version 1, no config), and each one's graph as LangGraph draws
 * it. Creating, updating or versioning assistants, and their schemas, are
 * not served.
 */
import type { Hono } from "hono";
import type { ServedGraph } from "./graphs.js";
import { containsJson } from "./threads.js";
import { BadRequest, body, checkOneOf, optionalNumber, optionalObject, optionalString, selectOf } from "./input.js";
import { reply, selected } from "./replies.js";

/** The fields a `select` may name of an assistant (the SDK's AssistantSelectField). */
const ASSISTANT_FIELDS = [
  "assistant_id",
  "graph_id",
  "name",
  "description",
  "config",
  "context",
  "created_at",
  "updated_at",
  "metadata",
  "version",
] as const;

/** What `sort_by` may name (the SDK's AssistantSortBy). */
const SORT_BY = ["assistant_id", "graph_id", "name", "created_at", "updated_at"] as const;

/** An assistant record, as the Agent Server answers it. */
interface AssistantRecord {
  assistant_id: string;
  graph_id: string;
  name: string;
  description: null;
  config: Record<string, never>;
  context: Record<string, never>;
  metadata: { created_by: "system" };
  version: 1;
  created_at: string;
  updated_at: string;
}

/** Adds the read-only assistants routes for `graphs` (their records dated `createdAt`) to `app`. */
export function registerAssistantRoutes(
  app: Hono,
  graphs: Readonly<Record<string, ServedGraph>>,
  createdAt: string,
): void {
  const assistants: AssistantRecord[] = Object.keys(graphs).map((name) => ({
    assistant_id: name,
    graph_id: name,
    name,
    description: null,
    config: {},
    context: {},
    metadata: { created_by: "system" },
    version: 1,
    created_at: createdAt,
    updated_at: createdAt,
  }));
  /** The assistants a search or count body asks for: `name` a part of theirs, in any case (the Agent Server's). */
  const matching = (json: Record<string, unknown>) => {
    const graphId = optionalString(json, "graph_id");
    const name = optionalString(json, "name")?.toLowerCase();
    const metadata = optionalObject(json, "metadata") ?? {};
    return assistants.filter(
      (assistant) =>
        (graphId === undefined || assistant.graph_id === graphId) &&
        (name === undefined || assistant.name.toLowerCase().includes(name)) &&
        containsJson(assistant.metadata, metadata),
    );
  };

  app.post("/assistants/search", async (c) => {
    const json = await body(c);
    const limit = optionalNumber(json, "limit") ?? 10;
    // As the Agent Server (1 or more): a page of none would name itself the next, and a client paging
    // while there is a next would ask it for ever.
    if (limit < 1) throw new BadRequest(`limit must be 1 or more; got ${limit}.`);
    const offset = optionalNumber(json, "offset") ?? 0;
    const sortBy = checkOneOf(optionalString(json, "sort_by") ?? "created_at", SORT_BY, "sort_by");
    const direction = checkOneOf(optionalString(json, "sort_order") ?? "desc", ["asc", "desc"], "sort_order");
    const select = selectOf(json.select, ASSISTANT_FIELDS, false);
    const found = matching(json);
    // Ties (every assistant is created with the server) fall back to the name, so a page is stable.
    const sign = direction === "asc" ? 1 : -1;
    found.sort((a, b) => sign * (compare(a[sortBy], b[sortBy]) || compare(a.name, b.name)));
    const page = found.slice(offset, offset + limit);
    if (offset + limit < found.length) c.header("X-Pagination-Next", String(offset + limit));
    return reply(
      c,
      page.map((assistant) => selected(assistant, select)),
    );
  });
  app.post("/assistants/count", async (c) => reply(c, matching(await body(c)).length));
  // As the Agent Server draws it: the graph's getGraphAsync, with `xray`, as JSON.
  app.get("/assistants/:assistant_id/graph", async (c) => {
    const xray = xrayOf(c.req.query("xray"));
    const name = c.req.param("assistant_id");
    // `graphs` has no prototype (bindGraphs): a name finds only a graph given.
    const graph = graphs[name];
    if (!graph) return reply(c, { error: "Assistant not found" }, 404);
    if (typeof graph.getGraphAsync !== "function") {
      return reply(c, { error: `The graph of ${JSON.stringify(name)} cannot draw itself (no getGraphAsync)` }, 404);
    }
    const drawable = await graph.getGraphAsync(xray === undefined ? {} : { xray });
    return reply(c, drawable.toJSON());
  });
  app.get("/assistants/:assistant_id", (c) => {
    const assistant = assistants.find((one) => one.assistant_id === c.req.param("assistant_id"));
    return assistant ? reply(c, assistant) : reply(c, { error: "Assistant not found" }, 404);
  });
}

/**
 * `getGraph`'s `xray` query (the SDK sends a boolean or a number as its
 * JSON text): true, false, or how many levels of subgraphs to draw.
 * @throws {BadRequest} anything else.
 */
function xrayOf(query: string | undefined): boolean | number | undefined {
  if (query === undefined) return undefined;
  if (query === "true" || query === "false") return query === "true";
  const levels = Number(query);
  if (query !== "" && Number.isInteger(levels) && levels >= 0) return levels;
  throw new BadRequest(`xray must be true, false or a number of levels; got ${JSON.stringify(query)}.`);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
