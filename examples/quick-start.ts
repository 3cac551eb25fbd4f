import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesDeltaValue, START, StateGraph, StateSchema } from "@langchain/langgraph/web";
import { IndexedDBSaver } from "langgraph-checkpoint-indexeddb";

const checkpointer = new IndexedDBSaver({ dbName: "my-app" });

// Your model goes here (any LangChain chat model); this one echoes, so the example runs as it is.
async function callModel(state: { messages: BaseMessage[] }) {
  const last = state.messages[state.messages.length - 1];
  return { messages: [new AIMessage(`You said: ${String(last?.content)}`)] };
}

const graph = new StateGraph(new StateSchema({ messages: MessagesDeltaValue }))
  .addNode("agent", callModel)
  .addEdge(START, "agent")
  .addEdge("agent", END)
  .compile({ checkpointer });

const config = { configurable: { thread_id: "conversation-1" } };
const state = await graph.invoke({ messages: [new HumanMessage("hi")] }, config);
console.log(state.messages.length, String(state.messages[state.messages.length - 1]?.content));
// Reload the page: the same thread_id continues the conversation (2 messages, then 4, 6…).
