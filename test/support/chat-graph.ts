/**
 * A chat graph whose "model" answers deterministically, shared by tests and
 * benches: one `agent` node that echoes the last message.
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import {
  END,
  MessagesDeltaValue,
  MessagesValue,
  START,
  StateGraph,
  StateSchema,
  type BaseCheckpointSaver,
} from "@langchain/langgraph/web";

/** Messages as comparable data: type and text, without random ids. */
export function plain(messages: BaseMessage[] | undefined): [string, string][] {
  return (messages ?? []).map((message) => [message.getType(), String(message.content)]);
}

/** The graph; `delta` keeps messages on `MessagesDeltaValue`. */
export function chatGraph(saver: BaseCheckpointSaver, delta = false) {
  const State = new StateSchema({ messages: delta ? MessagesDeltaValue : MessagesValue });
  return new StateGraph(State)
    .addNode("agent", (state) => {
      const last = state.messages[state.messages.length - 1];
      return { messages: [new AIMessage(`echo ${String(last?.content)} (#${state.messages.length})`)] };
    })
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: saver });
}

/** Runs one user message per entry of `turns` and returns the final messages. */
export async function chat(saver: BaseCheckpointSaver, threadId: string, turns: string[], delta = false) {
  const graph = chatGraph(saver, delta);
  const config = { configurable: { thread_id: threadId } };
  for (const text of turns) await graph.invoke({ messages: [new HumanMessage(text)] }, config);
  return plain((await graph.getState(config)).values.messages);
}
