/**
 * The example's agent: it answers "You said: …" a word at a time (as a
 * streaming model would, the words reaching the page before the checkpoint
 * does), and asks for approval before its `save` node when the message
 * starts with "save" (a static breakpoint, as browser apps use).
 */
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesDeltaValue, START, StateGraph, StateSchema } from "@langchain/langgraph/web";
import type { IndexedDBSaver } from "langgraph-checkpoint-indexeddb";

/** Where the streamed words go (the page's draft line). */
export type OnToken = (text: string) => void;

/** Builds the graph on `checkpointer`; `delayMs` is the time per streamed word. */
export function buildAgent(checkpointer: IndexedDBSaver, onToken: OnToken, delayMs = 40) {
  async function agent(state: { messages: BaseMessage[] }) {
    const last = state.messages[state.messages.length - 1];
    const words = `You said: ${String(last?.content)}`.split(" ");
    let text = "";
    for (const word of words) {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      text = text ? `${text} ${word}` : word;
      onToken(text);
    }
    return { messages: [new AIMessage(text)] };
  }
  const save = () => ({ messages: [new AIMessage("Saved.")] });
  const wantsSave = (state: { messages: BaseMessage[] }) =>
    String(state.messages[state.messages.length - 2]?.content ?? "").startsWith("save") ? "save" : END;
  return new StateGraph(new StateSchema({ messages: MessagesDeltaValue }))
    .addNode("agent", agent)
    .addNode("save", save)
    .addEdge(START, "agent")
    .addConditionalEdges("agent", wantsSave, ["save", END])
    .addEdge("save", END)
    .compile({ checkpointer, interruptBefore: ["save"] });
}
