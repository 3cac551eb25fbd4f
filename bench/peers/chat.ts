/**
 * The long delta chat the peers bench grows on every saver (shared by the
 * suite's page and the cold-start page, which must not load the other savers).
 */
import { HumanMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { chatGraph } from "../../test/support/chat-graph.js";

/** The thread of the long chat. */
export const CHAT_THREAD = "chat";

/** Adds `turns` turns to the delta chat of `threadId`, from turn `from`. */
export async function seed(saver: BaseCheckpointSaver, threadId: string, from: number, turns: number): Promise<void> {
  const graph = chatGraph(saver, true);
  const config = { configurable: { thread_id: threadId } };
  for (let i = from; i < from + turns; i++)
    await graph.invoke({ messages: [new HumanMessage(`question ${i}: ${"lorem ipsum ".repeat(6)}`)] }, config);
}

/** The number of messages of the chat's latest state through a new graph (2 a turn), checked against `turns`. */
export async function latestState(saver: BaseCheckpointSaver, turns: number, who: string): Promise<void> {
  const state = await chatGraph(saver, true).getState({ configurable: { thread_id: CHAT_THREAD } });
  const count = (state.values.messages as unknown[] | undefined)?.length ?? 0;
  if (count !== turns * 2) throw new Error(`${who}: the latest state has ${count} messages, not ${turns * 2}`);
}
