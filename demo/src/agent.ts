/**
 * The agent: a LangGraph StateGraph that runs entirely in the page
 * (`@langchain/langgraph/web`, so no AsyncLocalStorage: config is passed to
 * nodes by hand).
 *
 *   START → agent ─┬─ save_memory call ──→ tools  (paused before: approval) → agent
 *                  ├─ other tool calls ──→ recall (no approval)             → agent
 *                  └─ plain answer ──────→ END
 *
 * The approval is a static breakpoint (`interruptBefore: ["tools"]`), not
 * `interrupt()`, which needs AsyncLocalStorage in the browser. The saver
 * persists the pause, so the approval survives a reload: the thread's state
 * has `next: ["tools"]` until the user approves (`invoke(null)`) or rejects
 * (`updateState` with a ToolMessage as the `tools` node, then `invoke(null)`).
 */
import { type AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import {
  END,
  MessagesDeltaValue,
  START,
  StateGraph,
  StateSchema,
  type BaseCheckpointSaver,
  type BaseStore,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph/web";
import { ulid } from "ulid";
import { contentWords } from "./embeddings.js";
import type { ChatModel } from "./model.js";

/** Below this cosine similarity a memory is not about the query. */
const MIN_SCORE = 0.25;

export const AgentState = new StateSchema({ messages: MessagesDeltaValue });

/** The node that needs the user's approval, and the tool behind it. */
export const APPROVAL_NODE = "tools";
export const SAVE_MEMORY = "save_memory";

/** What the page passes in `configurable` on every run. */
export interface AgentConfigurable {
  thread_id: string;
  /** The owner of the memories: they live under `memoryNamespace(user_id)`. */
  user_id: string;
}

/** A custom stream chunk: the model's text as it arrives. */
export interface TokenChunk {
  type: "token";
  text: string;
}

export function memoryNamespace(userId: string): string[] {
  return ["users", userId, "memories"];
}

/** One saved memory, as the store keeps it. */
export interface Memory {
  text: string;
  savedAt: number;
}

/** The user's memories, oldest first. */
export async function listMemories(store: BaseStore, userId: string): Promise<{ key: string; text: string }[]> {
  const items = await store.search(memoryNamespace(userId), { limit: 1000 });
  return items
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
    .map((item) => ({ key: item.key, text: String((item.value as Partial<Memory>).text) }));
}

function lastAI(messages: BaseMessage[]): AIMessage | undefined {
  const last = messages[messages.length - 1];
  return last?.getType() === "ai" ? (last as AIMessage) : undefined;
}

/** The tool calls that wait for approval in a paused state, if any. */
export function pendingApproval(messages: BaseMessage[]) {
  return (lastAI(messages)?.tool_calls ?? []).filter((call) => call.name === SAVE_MEMORY);
}

/** ToolMessages saying the user rejected each pending call. */
export function rejectionMessages(messages: BaseMessage[]): ToolMessage[] {
  return (lastAI(messages)?.tool_calls ?? []).map(
    (call) =>
      new ToolMessage({
        tool_call_id: call.id ?? "",
        name: call.name,
        status: "error",
        content: "Rejected by the user: not saved.",
      }),
  );
}

/** Runs the last AI message's tool calls against the store. */
async function runTools(
  state: { messages: BaseMessage[] },
  config: LangGraphRunnableConfig,
): Promise<{ messages: ToolMessage[] }> {
  const store = config.store;
  if (!store) throw new Error("The agent needs a store: compile the graph with `store`.");
  const userId = (config.configurable as Partial<AgentConfigurable> | undefined)?.user_id;
  if (!userId) throw new Error("Pass `user_id` in `configurable`: memories are kept per user.");
  const namespace = memoryNamespace(userId);
  const messages: ToolMessage[] = [];
  for (const call of lastAI(state.messages)?.tool_calls ?? []) {
    let content: string;
    if (call.name === SAVE_MEMORY) {
      const text = String(call.args.memory ?? "").trim();
      const memory: Memory = { text, savedAt: Date.now() };
      await store.put(namespace, ulid(), { ...memory });
      content = `Saved: ${text}`;
    } else if (call.name === "recall_memories") {
      // A query with content words: semantic search (the store's index); else everything.
      const query = String(call.args.query ?? "").trim();
      const memories = contentWords(query).length
        ? (await store.search(namespace, { query, limit: 10 }))
            .filter((item) => (item.score ?? 0) >= MIN_SCORE)
            .map((item) => String((item.value as Partial<Memory>).text))
        : (await listMemories(store, userId)).map((memory) => memory.text);
      content = JSON.stringify(memories);
    } else {
      content = `Unknown tool ${call.name}.`;
    }
    messages.push(new ToolMessage({ tool_call_id: call.id ?? "", name: call.name, content }));
  }
  return { messages };
}

/** Builds the agent on a saver and a store; `model()` is read on every turn (settings may change). */
export function buildAgent(options: { checkpointer: BaseCheckpointSaver; store: BaseStore; model: () => ChatModel }) {
  return new StateGraph(AgentState)
    .addNode("agent", async (state, config) => {
      const reply = await options.model().respond(state.messages, {
        signal: config.signal,
        onToken: (text) => config.writer?.({ type: "token", text } satisfies TokenChunk),
      });
      return { messages: [reply] };
    })
    .addNode(APPROVAL_NODE, runTools)
    .addNode("recall", runTools)
    .addEdge(START, "agent")
    .addConditionalEdges(
      "agent",
      (state) => {
        const calls = lastAI(state.messages)?.tool_calls ?? [];
        if (calls.length === 0) return END;
        return calls.some((call) => call.name === SAVE_MEMORY) ? APPROVAL_NODE : "recall";
      },
      [APPROVAL_NODE, "recall", END],
    )
    .addEdge(APPROVAL_NODE, "agent")
    .addEdge("recall", "agent")
    .compile({ checkpointer: options.checkpointer, store: options.store, interruptBefore: [APPROVAL_NODE] });
}

export type Agent = ReturnType<typeof buildAgent>;
