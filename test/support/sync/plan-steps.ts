/**
 * How much work PostgreSQL did for a query, counted, not timed: the rows
 * each node of its plan produced or filtered out, times the node's loops,
 * from `EXPLAIN (ANALYZE, FORMAT JSON)`. A nested loop that compares every
 * stored row with every pushed one counts n², a hash join or an index
 * lookup per row counts a few n, whatever the machine's load.
 */
import type { PoolClient, QueryResult, QueryResultRow } from "pg";

/** The fields of an `EXPLAIN (ANALYZE, FORMAT JSON)` node that count work. */
interface PlanNode {
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Join Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}

/** The rows `node` and the nodes under it produced or removed, each times its loops. */
export function planSteps(node: PlanNode): number {
  const rows =
    (node["Actual Rows"] ?? 0) +
    (node["Rows Removed by Filter"] ?? 0) +
    (node["Rows Removed by Join Filter"] ?? 0) +
    (node["Rows Removed by Index Recheck"] ?? 0);
  const below = (node.Plans ?? []).reduce((sum, child) => sum + planSteps(child), 0);
  return rows * (node["Actual Loops"] ?? 1) + below;
}

/**
 * `client` (inside a transaction) with `query(text, values)` measured: each
 * statement first runs under `EXPLAIN ANALYZE` in a savepoint that is rolled
 * back (so an INSERT counts without landing twice), then for real. `steps`
 * is every statement's {@link planSteps} so far, by statement.
 */
export function countingPlanSteps(client: PoolClient): { client: PoolClient; steps: number[] } {
  const steps: number[] = [];
  const query = async <R extends QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>> => {
    await client.query("SAVEPOINT plan_steps");
    const explained = await client.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
      values,
    );
    await client.query("ROLLBACK TO SAVEPOINT plan_steps");
    steps.push(planSteps(explained.rows[0]!["QUERY PLAN"][0]!.Plan));
    return client.query<R>(text, values);
  };
  return {
    client: new Proxy(client, { get: (target, key) => (key === "query" ? query : Reflect.get(target, key)) }),
    steps,
  };
}
