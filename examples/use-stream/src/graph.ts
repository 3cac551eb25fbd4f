/**
 * The example's agent: a deterministic chat graph that needs no model and no
 * network. It streams its answer a character at a time (LangChain's
 * `FakeListChatModel`, so `useStream` sees real `messages-tuple` tokens), and
 * a message that starts with "approve:" pauses for a human's answer through
 * `interruptWith` (LangGraph's `interrupt()` needs `AsyncLocalStorage`, which
 * browsers lack).
 */
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import {
  END,
  MessagesValue,
  START,
  StateGraph,
  StateSchema,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph/web";
import { interruptWith } from "langgraph-checkpoint-indexeddb";

/** What the approval asks, as `useStream`'s `interrupt.value` shows it. */
export interface ApprovalRequest {
  question: string;
}

function lastText(messages: BaseMessage[]): string {
  return String(messages[messages.length - 1]?.content ?? "");
}

/**
 * The chat graph. `paceMs` is the pause between two streamed characters: the
 * tests' reload-mid-answer case needs an answer still streaming when it reloads.
 */
export function chatGraph(paceMs: number) {
  const State = new StateSchema({ messages: MessagesValue });
  return new StateGraph(State)
    .addNode("agent", async (state, config: LangGraphRunnableConfig) => {
      // No sleep at all at pace 0: a background tab clamps even a 0 ms timer (Firefox: to a second).
      const sleep = paceMs > 0 ? paceMs : undefined;
      const model = new FakeListChatModel({ responses: [`echo ${lastText(state.messages)}`], sleep });
      return { messages: [await model.invoke(state.messages, config)] };
    })
    .addNode("approve", async (state, config: LangGraphRunnableConfig) => {
      const answer = interruptWith<ApprovalRequest, string>(config, { question: lastText(state.messages) });
      return { messages: [new AIMessage(`approved: ${answer}`)] };
    })
    .addConditionalEdges(START, (state) => (lastText(state.messages).startsWith("approve:") ? "approve" : "agent"), [
      "agent",
      "approve",
    ])
    .addEdge("agent", END)
    .addEdge("approve", END)
    .compile();
}
