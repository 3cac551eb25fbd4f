/**
 * A run held open so a test can act while it goes: a run of the test graph
 * (graph.ts) on a server of server.ts, held in its node until the test lets
 * it go or stops it, however loaded the machine is (a timed run, 300 ms or
 * 5 s, ended before the test's checks or outlived its bounds), and waited
 * for where the test needs it.
 */
import type { Client, Run } from "@langchain/langgraph-sdk";
import { letGo } from "./graph.js";
import { atNode, human, until } from "./timing.js";

/** What a held run is created with, beside its input and its hold (`streamMode`, `multitaskStrategy`…). */
export type HeldRunOptions<State extends Record<string, unknown>> = Omit<
  NonNullable<Parameters<Client<State>["runs"]["create"]>[2]>,
  "input" | "config"
> & {
  /**
   * What to wait for once the run is created: `"node"` (in its node, its input written, so a stop or a
   * rollback has something to undo; {@link atNode}), `"running"` (its status), or nothing (the default:
   * pending or running, as the server answered).
   */
  at?: "node" | "running";
  /** The client that waits (another tab's server on the same database); default the one that starts it. */
  watcher?: Client<State>;
};

/** A held run: its record as created, and what lets it go on (a run never let go ends only when stopped). */
export interface HeldRun {
  run: Run;
  release: () => void;
}

/** Starts a run of `text` on `threadId`, held in the agent node until `release` (or a stop). */
export async function heldRun<State extends Record<string, unknown>>(
  client: Client<State>,
  threadId: string,
  text: string,
  { at, watcher = client, ...options }: HeldRunOptions<State> = {},
): Promise<HeldRun> {
  const hold = crypto.randomUUID();
  const run = await client.runs.create(threadId, "agent", {
    ...options,
    input: human(text),
    config: { configurable: { hold } },
  });
  if (at === "node") await atNode(watcher, threadId, run.run_id);
  if (at === "running") await until(async () => (await watcher.runs.get(threadId, run.run_id)).status === "running");
  return { run, release: () => letGo(hold) };
}
