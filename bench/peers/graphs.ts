/**
 * The graphs the peers suite runs on every saver: the 2-node chat of the
 * graph loop (two nodes appending 200 characters each) and a tool loop of
 * six supersteps (an agent asks for a tool three times, each answered by a
 * tools node; messages on LangGraph's messages reducer).
 */
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { END, MessagesValue, START, StateGraph, StateSchema } from "@langchain/langgraph/web";

/** The 2-node chat of the graph loop suite. */
export { loopGraph as twoNodeChat } from "../suites/loop.js";

const TOOL_CALLS_PER_RUN = 3;

/** The tool loop: agent, tools, agent, tools, agent, tools (six supersteps), then the end. */
export function toolLoop(saver: BaseCheckpointSaver) {
  const State = new StateSchema({ messages: MessagesValue });
  let call = 0;
  return new StateGraph(State)
    .addNode("agent", () => ({
      messages: [
        new AIMessage({
          content: "looking it up",
          tool_calls: [{ id: `call-${call++}`, name: "lookup", args: { query: "weather ".repeat(10) } }],
        }),
      ],
    }))
    .addNode("tools", (state) => {
      const last = state.messages[state.messages.length - 1] as AIMessage;
      const id = last.tool_calls?.[0]?.id ?? "none";
      return { messages: [new ToolMessage({ tool_call_id: id, content: "sunny, 21 °C ".repeat(15) })] };
    })
    .addEdge(START, "agent")
    .addEdge("agent", "tools")
    .addConditionalEdges("tools", (state) => {
      const since = state.messages.length - state.messages.findLastIndex((m) => m.getType() === "human") - 1;
      return since >= TOOL_CALLS_PER_RUN * 2 ? END : "agent";
    })
    .compile({ checkpointer: saver });
}

/** One user message for the tool loop. */
export const toolLoopInput = () => ({ messages: [new HumanMessage("what is the weather?")] });
