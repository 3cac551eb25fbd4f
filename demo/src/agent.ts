/**
 * The agent: a LangGraph StateGraph that runs entirely in the page
 * (`@langchain/langgraph/web`, so no AsyncLocalStorage: config is passed to
 * nodes by hand).
 *
 *   START → agent ─┬─ save_memory call ──→ tools  (asks for approval) → agent
 *                  ├─ other tool calls ──→ recall (no approval)     → agent
 *                  └─ plain answer ──────→ END
 *
 * The approval is asked inside the `tools` node with `interruptWith(config, …)`
 * (LangGraph's `interrupt()` needs AsyncLocalStorage, which the browser lacks).
 * The saver persists the pause, so the question survives a reload; the answer
 * (approve, approve with edited text, or reject with a reason) comes back by
 * the question's id, `Command({ resume: { [id]: answer } })` (a stale card in
 * another tab cannot answer a newer question), and the agent sees its outcome
 * in the ToolMessage.
 * Threads paused by the earlier demo's static breakpoint (`interruptBefore:
 * ["tools"]`, `next: ["tools"]` without a question) take the same
 * `Command({ resume })`: LangGraph gives it to the first question asked.
 */
import { AIMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import {
  END,
  MessagesDeltaValue,
  START,
  StateGraph,
  StateSchema,
  type BaseCheckpointSaver,
  type BaseStore,
  type LangGraphRunnableConfig,
  type StateSnapshot,
} from "@langchain/langgraph/web";
import { interruptWith } from "./lib.js";
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

/**
 * An answer the user stopped: the text streamed until then, kept as the
 * agent's message (as ChatGPT and Claude.ai keep it) and marked, so the page
 * says it was stopped, also after a reload and after later turns.
 */
export function stoppedAnswer(text: string): AIMessage {
  return stamped(new AIMessage({ content: text, response_metadata: { stopped_by_user: true } }));
}

/**
 * Marks when a message was written (`additional_kwargs.created_at`, ms since
 * the epoch), for the time shown beside it. The model never sees it: the
 * endpoint client sends content and tool calls only.
 */
export function stamped<T extends BaseMessage>(message: T, at = Date.now()): T {
  message.additional_kwargs = { ...message.additional_kwargs, created_at: at };
  return message;
}

/** When a message was written, if it says (messages of older versions of the demo do not). */
export function createdAt(message: BaseMessage): number | undefined {
  const at = message.additional_kwargs?.created_at;
  return typeof at === "number" ? at : undefined;
}

/** Whether `message` is an answer the user stopped (see {@link stoppedAnswer}). */
export function isStopped(message: BaseMessage): boolean {
  return (
    message.getType() === "ai" &&
    (message.response_metadata as { stopped_by_user?: unknown } | undefined)?.stopped_by_user === true
  );
}

/** Memory texts compared as the user would: case, spacing and a final full stop do not matter. */
function sameMemory(a: string, b: string): boolean {
  const norm = (text: string) =>
    text
      .toLowerCase()
      .replace(/\s+/g, " ")
      .replace(/[.!\s]+$/, "")
      .trim();
  return norm(a) === norm(b);
}

function lastAI(messages: BaseMessage[]): AIMessage | undefined {
  const last = messages[messages.length - 1];
  return last?.getType() === "ai" ? (last as AIMessage) : undefined;
}

/** The tool calls that wait for approval in a paused state, if any. */
export function pendingApproval(messages: BaseMessage[]) {
  return (lastAI(messages)?.tool_calls ?? []).filter((call) => call.name === SAVE_MEMORY);
}

/**
 * The id of the approval question pending in `snapshot` (LangGraph's
 * interrupt id), or undefined: none asked (a thread paused by the earlier
 * demo's breakpoint, before `tools`) or nothing pending. The card answers by it.
 */
export function pendingQuestionId(snapshot: StateSnapshot): string | undefined {
  return snapshot.tasks.find((task) => task.name === APPROVAL_NODE)?.interrupts[0]?.id;
}

/** What the approval card asks: the memories the pending save_memory calls would keep. */
export interface ApprovalQuestion {
  tool: typeof SAVE_MEMORY;
  memories: string[];
}

/** The user's answer: save (the texts as edited, one per call), or not, with a reason the agent reads. */
export type ApprovalAnswer = { decision: "approve"; memories?: string[] } | { decision: "reject"; reason?: string };

/** Asks once for every save_memory call of the turn, before anything is saved (the node reruns on resume). */
function askApproval(calls: { args: Record<string, unknown> }[], config: LangGraphRunnableConfig): ApprovalAnswer {
  if (calls.length === 0) return { decision: "approve" };
  const memories = calls.map((call) => String(call.args.memory ?? "").trim());
  const answer = interruptWith<ApprovalQuestion, ApprovalAnswer>(config, { tool: SAVE_MEMORY, memories });
  if (answer?.decision !== "approve" && answer?.decision !== "reject") {
    throw new Error(`An approval answer is { decision: "approve" | "reject" }; got ${JSON.stringify(answer)}.`);
  }
  return answer;
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
  const calls = lastAI(state.messages)?.tool_calls ?? [];
  const answer = askApproval(
    calls.filter((call) => call.name === SAVE_MEMORY),
    config,
  );
  const messages: ToolMessage[] = [];
  let saved = 0;
  for (const call of calls) {
    let content: string;
    if (call.name === SAVE_MEMORY && answer.decision === "reject") {
      const reason = answer.reason?.trim() || "no reason given";
      messages.push(
        new ToolMessage({
          tool_call_id: call.id ?? "",
          name: call.name,
          status: "error",
          content: `Rejected by the user: ${reason}`,
        }),
      );
      continue;
    } else if (call.name === SAVE_MEMORY) {
      const proposed = String(call.args.memory ?? "").trim();
      const edited = answer.decision === "approve" ? answer.memories?.[saved]?.trim() : undefined;
      // An editor the user emptied saves nothing (the card does not offer Approve then).
      const text = edited ?? proposed;
      saved += 1;
      // Saying the same thing twice (or answering a regenerated question again) keeps one memory.
      const known = text ? await listMemories(store, userId) : [];
      if (!text) {
        content = "Not saved: the user cleared the memory.";
      } else if (known.some((memory) => sameMemory(memory.text, text))) {
        content = `Already saved: ${text}`;
      } else {
        const memory: Memory = { text, savedAt: Date.now() };
        await store.put(namespace, ulid(), { ...memory });
        content = text === proposed ? `Saved: ${text}` : `Saved as edited by the user: ${text}`;
      }
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

/**
 * Builds the agent on a saver and a store. `model()` is read on every turn
 * (settings may change), and so are the thread's custom `instructions`: a
 * system message put before the conversation for the model, never stored in
 * the thread's state.
 */
export function buildAgent(options: {
  checkpointer: BaseCheckpointSaver;
  store: BaseStore;
  model: () => ChatModel;
  instructions?: (threadId: string) => Promise<string>;
}) {
  return new StateGraph(AgentState)
    .addNode("agent", async (state, config) => {
      const threadId = (config.configurable as Partial<AgentConfigurable> | undefined)?.thread_id;
      const instructions = threadId ? await options.instructions?.(threadId) : undefined;
      const messages = instructions ? [new SystemMessage(instructions), ...state.messages] : state.messages;
      const reply = await options.model().respond(messages, {
        signal: config.signal,
        onToken: (text) => config.writer?.({ type: "token", text } satisfies TokenChunk),
      });
      return { messages: [stamped(reply)] };
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
    .compile({ checkpointer: options.checkpointer, store: options.store });
}

export type Agent = ReturnType<typeof buildAgent>;
