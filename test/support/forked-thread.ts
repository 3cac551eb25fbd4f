/**
 * A thread with an edited turn (a fork, as an "edit message" UI makes one)
 * on three kinds of channel, and its state and history as comparable data:
 * for tests that move such a thread between savers.
 */
import { HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  DeltaValue,
  END,
  START,
  StateGraph,
  StateSchema,
  type BaseCheckpointSaver,
  type StateSnapshot,
} from "@langchain/langgraph/web";
import { z } from "zod";
import { chatGraph, plain } from "./chat-graph.js";

/** The part of a compiled graph these tests use. */
interface Runner {
  invoke(input: unknown, config: RunnableConfig): Promise<unknown>;
  getState(config: RunnableConfig): Promise<StateSnapshot>;
  getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
}

/** One kind of channel: its graph, a user turn, and its state as data. */
export interface ForkKind {
  name: string;
  graph(saver: BaseCheckpointSaver): Runner;
  turn(text: string): unknown;
  view(values: Record<string, unknown>): unknown;
}

/** A log on a `DeltaValue` that snapshots at every update: a `DeltaSnapshot` value at each version. */
function logGraph(saver: BaseCheckpointSaver): Runner {
  const State = new StateSchema({
    log: new DeltaValue(
      z.array(z.string()).default(() => []),
      {
        reducer: (state: string[], writes: string[][]) => state.concat(...writes),
        snapshotFrequency: 1,
      },
    ),
  });
  return new StateGraph(State)
    .addNode("agent", (state) => ({ log: [`reply to ${state.log[state.log.length - 1]}`] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: saver });
}

const messages = (values: Record<string, unknown>) => plain(values.messages as Parameters<typeof plain>[0]);

/** MessagesValue, MessagesDeltaValue, and a DeltaValue with snapshots. */
export const FORK_KINDS: ForkKind[] = [
  {
    name: "MessagesValue",
    graph: (saver) => chatGraph(saver, false),
    turn: (text) => ({ messages: [new HumanMessage(text)] }),
    view: messages,
  },
  {
    name: "MessagesDeltaValue",
    graph: (saver) => chatGraph(saver, true),
    turn: (text) => ({ messages: [new HumanMessage(text)] }),
    view: messages,
  },
  {
    name: "DeltaValue with snapshots",
    graph: logGraph,
    turn: (text) => ({ log: [text] }),
    view: (values) => values.log,
  },
];

/** The thread's config. */
const thread = (threadId: string): RunnableConfig => ({ configurable: { thread_id: threadId } });

/**
 * Runs turns "one" and "two", then `edits` times an edited turn two from the
 * end of turn one ("edited two", "edited two (2)", …).
 *
 * @returns The checkpoint ids ending each branch: the original, then each edited one.
 */
export async function forkThread(
  saver: BaseCheckpointSaver,
  kind: ForkKind,
  threadId: string,
  edits = 1,
): Promise<string[]> {
  const graph = kind.graph(saver);
  const head = async () => (await graph.getState(thread(threadId))).config.configurable?.checkpoint_id as string;
  await graph.invoke(kind.turn("one"), thread(threadId));
  const afterOne = (await graph.getState(thread(threadId))).config;
  await graph.invoke(kind.turn("two"), thread(threadId));
  const heads = [await head()];
  for (let edit = 1; edit <= edits; edit++) {
    await graph.invoke(kind.turn(edit === 1 ? "edited two" : `edited two (${edit})`), afterOne);
    heads.push(await head());
  }
  return heads;
}

/** The latest state and the whole history: ids, parents, next nodes and values. */
export async function forkedView(saver: BaseCheckpointSaver, kind: ForkKind, threadId: string) {
  const graph = kind.graph(saver);
  const snapshot = (state: StateSnapshot) => ({
    id: state.config.configurable?.checkpoint_id as unknown,
    parent: state.parentConfig?.configurable?.checkpoint_id as unknown,
    next: state.next,
    values: kind.view(state.values as Record<string, unknown>),
  });
  const history = [];
  for await (const state of graph.getStateHistory(thread(threadId))) history.push(snapshot(state));
  return { state: snapshot(await graph.getState(thread(threadId))), history };
}

/** Runs turn "three" from each given checkpoint and returns each resulting state's values. */
export async function continueBranches(
  saver: BaseCheckpointSaver,
  kind: ForkKind,
  threadId: string,
  heads: string[],
): Promise<unknown[]> {
  const graph = kind.graph(saver);
  const out = [];
  for (const head of heads) {
    await graph.invoke(kind.turn("three"), { configurable: { thread_id: threadId, checkpoint_id: head } });
    out.push(kind.view((await graph.getState(thread(threadId))).values as Record<string, unknown>));
  }
  return out;
}
