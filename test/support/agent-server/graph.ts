/**
 * The graph the local agent server tests serve (Node and Chromium): a chat
 * whose "model" streams its answer token by token (messages-tuple), writes a
 * custom event, waits `delay_ms` (from `config.configurable`, stopping early
 * when the run is aborted), keeps the thread busy for `busy_ms` in 60 ms
 * slices (CPU work, as a model run in the page would be), and asks for an approval through `interruptWith`
 * when a message starts with "approve:".
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
import { interruptWith } from "../../../src/interrupt/index.js";
import { sleep } from "../runs/scenario.js";

function lastText(messages: BaseMessage[]): string {
  return String(messages[messages.length - 1]?.content ?? "");
}

/** Keeps this thread busy for `ms`, in 60 ms slices with a macrotask between them. */
async function busy(ms: number): Promise<void> {
  for (let spent = 0; spent < ms; spent += 60) {
    const end = performance.now() + 60;
    while (performance.now() < end);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/** The chat graph, uncompiled checkpointer-wise: the server binds its saver. */
export function agentGraph() {
  const State = new StateSchema({ messages: MessagesValue });
  return new StateGraph(State)
    .addNode("agent", async (state, config: LangGraphRunnableConfig) => {
      config.writer?.({ thinking: lastText(state.messages) });
      await sleep(Number(config.configurable?.delay_ms ?? 0), config.signal);
      await busy(Number(config.configurable?.busy_ms ?? 0));
      const model = new FakeListChatModel({ responses: [`echo ${lastText(state.messages)}`] });
      const answer = await model.invoke(state.messages, config);
      return { messages: [answer] };
    })
    .addNode("approve", async (state, config: LangGraphRunnableConfig) => {
      const answer = interruptWith<{ question: string }, string>(config, { question: lastText(state.messages) });
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
