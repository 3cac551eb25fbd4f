/**
 * The page API reads a `MessagesDeltaValue` thread as the app's
 * `graph.getState` does when the graph is fed message-likes
 * (`{ role: "user", content }`, the common way to invoke LangGraph.js): each
 * is a typed message, and an update by id replaces its message.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { END, MessagesDeltaValue, START, StateGraph, StateSchema } from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { pageApi } from "./page.js";

const unique = () => `playwright-messages-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

describe("reading a delta messages channel fed message-likes", () => {
  it("gives the messages getState gives, an edit by id replacing the message", async () => {
    const dbName = unique();
    const saver = new IndexedDBSaver({ dbName });
    const graph = new StateGraph(new StateSchema({ messages: MessagesDeltaValue }))
      .addNode("agent", () => ({
        messages: [
          {
            role: "assistant",
            content: "hello back",
            id: "a1",
            // OpenAI's form, which LangChain turns into { id, name, args } (helper-52).
            tool_calls: [{ id: "c1", type: "function", function: { name: "search", arguments: '{"q":"x"}' } }],
          },
          { role: "tool", content: "found", tool_call_id: "c1", id: "r1" },
        ],
      }))
      .addEdge(START, "agent")
      .addEdge("agent", END)
      .compile({ checkpointer: saver });
    const config = { configurable: { thread_id: "t1" } };
    try {
      await graph.invoke({ messages: [{ role: "user", content: "hi", id: "h1" }] }, config);
      await graph.updateState(config, { messages: [{ role: "user", content: "hi (edited)", id: "h1" }] });
      await graph.updateState(config, { messages: [["system", "be brief"]] });
      const values = (await graph.getState(config)).values as { messages: BaseMessage[] };
      const app = values.messages.map((message) => [message.getType(), message.content]);
      expect(app).toEqual([
        ["human", "hi (edited)"],
        ["ai", "hello back"],
        ["tool", "found"],
        ["system", "be brief"],
      ]);
      const state = await pageApi.read("t1", { dbName });
      type Read = {
        type: string;
        content: unknown;
        id?: string;
        tool_calls?: { id: string; name: string; args: unknown }[];
      };
      const messages = state?.values.messages as Read[];
      expect(messages.map((message) => [message.type, message.content])).toEqual(app);
      expect(messages.slice(0, 3).map((message) => message.id)).toEqual(["h1", "a1", "r1"]);
      const calls = (values.messages[1] as BaseMessage & { tool_calls: { id: string; name: string; args: unknown }[] })
        .tool_calls;
      expect(calls.map(({ id, name, args }) => ({ id, name, args }))).toEqual([
        { id: "c1", name: "search", args: { q: "x" } },
      ]);
      expect(messages[1]!.tool_calls?.map(({ id, name, args }) => ({ id, name, args }))).toEqual(
        calls.map(({ id, name, args }) => ({ id, name, args })),
      );
    } finally {
      await saver.close();
      await pageApi.clear({ dbName, deleteDatabase: true });
    }
  });
});
