/**
 * The models the agent can call: an embedded deterministic assistant (the
 * default: no key, no network) and any OpenAI-compatible chat endpoint,
 * streamed over server-sent events with plain `fetch`.
 */
import { AIMessage, type BaseMessage, type ToolMessage } from "@langchain/core/messages";
import { connectRefusal } from "../csp.js";
import type { ModelSettings } from "./settings.js";

/** An address the page's own Content-Security-Policy forbids (see csp.ts `connectRefusal`): nothing was asked of it. */
export class PolicyRefusal extends Error {
  override name = "PolicyRefusal";
}

/** A chat model as the agent node uses it. */
export interface ChatModel {
  /** Answers the conversation; `onToken` receives the text as it arrives. */
  respond(
    messages: BaseMessage[],
    options: { onToken?: (text: string) => void; signal?: AbortSignal },
  ): Promise<AIMessage>;
}

/** The tools the agent offers, in OpenAI's function format. */
export const TOOL_SPECS = [
  {
    type: "function",
    function: {
      name: "save_memory",
      description: "Save a fact about the user to long-term memory (the user approves it first).",
      parameters: {
        type: "object",
        properties: { memory: { type: "string", description: "The fact, as the user said it." } },
        required: ["memory"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "recall_memories",
      description: "List what is saved in long-term memory about the user.",
      parameters: { type: "object", properties: { query: { type: "string" } } },
    },
  },
] as const;

export const SYSTEM_PROMPT =
  "You are a helpful assistant running entirely in the user's browser. " +
  "When the user asks you to remember something, call save_memory (they approve it). " +
  "When they ask what you remember, call recall_memories and answer from its result.";

/** My → your, so a memory reads naturally when the assistant says it back. */
export function secondPerson(text: string): string {
  const swaps: Record<string, string> = {
    i: "you",
    "i'm": "you're",
    "i’m": "you’re",
    me: "you",
    my: "your",
    mine: "yours",
    myself: "yourself",
    am: "are",
  };
  return text.replace(/[\p{L}’']+/gu, (word) => {
    const swap = swaps[word.toLowerCase()];
    return swap ?? word;
  });
}

/** The trailing tool results and the call that asked for each. */
function trailingToolResults(messages: BaseMessage[]) {
  const results: ToolMessage[] = [];
  let i = messages.length - 1;
  for (; i >= 0 && messages[i]!.getType() === "tool"; i--) results.unshift(messages[i] as ToolMessage);
  const calls = (messages[i] as AIMessage | undefined)?.tool_calls ?? [];
  return results.map((result) => {
    const call = calls.find((c) => c.id === result.tool_call_id);
    return { name: call?.name ?? "", args: call?.args ?? {}, result };
  });
}

let callCounter = 0;
function toolCallId(): string {
  callCounter += 1;
  return `call_${Date.now().toString(36)}_${callCounter}`;
}

/** The local assistant's reply to the conversation so far: same input, same answer. */
export function localReply(messages: BaseMessage[]): AIMessage {
  const last = messages[messages.length - 1];
  if (last?.getType() === "tool") {
    const lines = trailingToolResults(messages).map(({ name, args, result }) => {
      const text = String(result.content);
      if (name === "save_memory") {
        // The user's reason for a rejection is in the tool's result: the assistant says it heard it.
        const reason = /^Rejected by the user: (.+)$/i.exec(text)?.[1];
        if (result.status === "error" || /^rejected/i.test(text))
          return reason && reason !== "no reason given"
            ? `Okay, I won't remember that (you said: ${reason}).`
            : "Okay, I won't remember that.";
        const known = /^Already saved:\s*(.+)$/is.exec(text)?.[1];
        if (known) return `I already remember that ${secondPerson(known)}.`;
        return `Got it. I'll remember that ${secondPerson(text.replace(/^Saved(?: as edited by the user)?:\s*/, ""))}.`;
      }
      if (name === "recall_memories") {
        const memories = JSON.parse(text) as string[];
        const query = String(args.query ?? "").trim();
        const about = query ? secondPerson(query) : "you";
        if (memories.length === 0) {
          return query
            ? `I don't remember anything about ${about}.`
            : "I don't remember anything about you yet. Say “remember that …” and I'll ask before saving it.";
        }
        return [`Here's what I remember about ${about}:`, ...memories.map((m) => `• ${secondPerson(m)}`)].join("\n");
      }
      return `The tool said: ${text}`;
    });
    return new AIMessage(lines.join("\n"));
  }
  const text = String(last?.content ?? "").trim();
  const remember = /^(?:please\s+)?remember(?:\s+that)?\s+(.+)$/is.exec(text);
  if (remember) {
    const memory = remember[1]!.trim().replace(/[.!\s]+$/, "");
    return new AIMessage({
      content: "",
      tool_calls: [{ id: toolCallId(), name: "save_memory", args: { memory }, type: "tool_call" }],
    });
  }
  const recall =
    /\b(?:what do you (?:remember|know)|do you remember|what have you remembered)\b(?:\s+about\s+(.+?))?\??$/i.exec(
      text,
    );
  if (recall) {
    const query = recall[1]?.replace(/\b(me|myself)\b/gi, "").trim() ?? "";
    return new AIMessage({
      content: "",
      tool_calls: [{ id: toolCallId(), name: "recall_memories", args: { query }, type: "tool_call" }],
    });
  }
  const turn = messages.filter((m) => m.getType() === "human").length;
  if (/^(hi|hello|hey|good (morning|afternoon|evening))\b/i.test(text)) {
    return new AIMessage(
      "Hello! I'm the built-in assistant: I run in this page, offline. Ask me to “remember that …”, or ask “what do you remember about me?”.",
    );
  }
  if (/\b(help|what can you do)\b/i.test(text)) {
    return new AIMessage(
      "I keep this conversation in IndexedDB, so it survives reloads. I can remember facts about you (after you approve each one) and recall them in any thread. Open the history to travel back in time or fork.",
    );
  }
  const words = text.split(/\s+/).filter(Boolean).length;
  const about = `${words} ${words === 1 ? "word" : "words"}, message ${turn} of this thread`;
  // Lines of Markdown (a list, code, a table) quoted inline would take the
  // closing words into their last block (a table row swallows them): quote
  // them as a block, after the words.
  if (text.includes("\n")) {
    const quoted = text
      .split("\n")
      .map((line) => `> ${line}`)
      .join("\n");
    return new AIMessage(`You said (${about}):\n\n${quoted}`);
  }
  return new AIMessage(`You said: “${text}” (${about}).`);
}

/** The local assistant "thinks" this long before its first word, as a remote model would. */
const THINK_MS = 150;
/** …then writes a few words per step, so any answer streams in at most ~150 steps. */
const STEP_MS = 15;
const MAX_STEPS = 150;

/**
 * `?pace=0` in the page's address: the local model answers at once, to build
 * long threads quickly (a demo of a 300-turn history, and its test).
 * `?pace=slow`: four times slower steps (a long answer takes about 9 s), to
 * watch another tab answer, or to try Stop.
 */
function pace(): "instant" | "model" | "slow" {
  if (typeof location === "undefined") return "model";
  const value = new URLSearchParams(location.search).get("pace");
  return value === "0" ? "instant" : value === "slow" ? "slow" : "model";
}

/** Waits, or rejects at once with the signal's reason when the run is stopped. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    function onAbort(): void {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The embedded assistant. It streams its answer word by word at a model's
 * pace (the page must cope with a token stream, and Stop has something to
 * stop), and honours the run's AbortSignal.
 */
export const localModel: ChatModel = {
  async respond(messages, { onToken, signal }) {
    const reply = localReply(messages);
    const pieces = String(reply.content).match(/\S+\s*/g) ?? [];
    const speed = pace();
    if (speed === "instant") {
      for (const piece of pieces) onToken?.(piece);
      return reply;
    }
    await pause(THINK_MS, signal);
    const perStep = Math.max(1, Math.ceil(pieces.length / MAX_STEPS));
    for (let i = 0; i < pieces.length; i++) {
      if (i > 0 && i % perStep === 0) await pause(speed === "slow" ? 4 * STEP_MS : STEP_MS, signal);
      onToken?.(pieces[i]!);
    }
    return reply;
  },
};

/** A LangChain message as an OpenAI chat message. */
function toOpenAI(message: BaseMessage): Record<string, unknown> {
  const content = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
  switch (message.getType()) {
    case "human":
      return { role: "user", content };
    case "system":
      return { role: "system", content };
    case "tool":
      return { role: "tool", tool_call_id: (message as ToolMessage).tool_call_id, content };
    default: {
      const calls = (message as AIMessage).tool_calls ?? [];
      return calls.length
        ? {
            role: "assistant",
            content: content || null,
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: JSON.stringify(c.args) },
            })),
          }
        : { role: "assistant", content };
    }
  }
}

/** Server-sent events: yields the `data` of each event of a response body. */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    buffer += decoder.decode(value, { stream: !done });
    const events = buffer.split(/\r?\n\r?\n/);
    buffer = done ? "" : events.pop()!;
    for (const event of events) {
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) yield data;
    }
    if (done) return;
  }
}

/**
 * The human part of an endpoint's error body: OpenAI-compatible servers send
 * `{"error": {"message": …}}`, which is what a reader wants, not the JSON.
 */
export function endpointMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const found =
      typeof parsed.error === "string" ? parsed.error : (parsed.error?.message ?? parsed.message ?? parsed.detail);
    if (typeof found === "string" && found.trim()) return found.trim().slice(0, 300);
  } catch {
    // Not JSON: plain text (or HTML) is shown as it is, cut short.
  }
  return body
    .replace(/<[^>]*>/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 300);
}

interface ChunkChoice {
  delta?: {
    content?: string | null;
    tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
  };
}

/** Any OpenAI-compatible `/chat/completions` endpoint, streamed. */
export function openAIModel(settings: ModelSettings): ChatModel {
  return {
    async respond(messages, { onToken, signal }) {
      const url = `${settings.baseUrl.replace(/\/+$/, "")}/chat/completions`;
      const response = await fetch(url, {
        method: "POST",
        signal,
        headers: {
          "content-type": "application/json",
          ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: settings.model,
          stream: true,
          tools: TOOL_SPECS,
          messages: [{ role: "system", content: SYSTEM_PROMPT }, ...messages.map(toOpenAI)],
        }),
      });
      if (!response.ok || !response.body) {
        const detail = endpointMessage(await response.text().catch(() => ""));
        throw new Error(
          `The model endpoint answered ${response.status} ${response.statusText}${detail ? `: ${detail}` : ""}`,
        );
      }
      let content = "";
      const calls: { id: string; name: string; args: string }[] = [];
      for await (const data of sseData(response.body)) {
        if (data === "[DONE]") break;
        const delta = (JSON.parse(data) as { choices?: ChunkChoice[] }).choices?.[0]?.delta;
        if (delta?.content) {
          content += delta.content;
          onToken?.(delta.content);
        }
        for (const call of delta?.tool_calls ?? []) {
          const slot = (calls[call.index] ??= { id: "", name: "", args: "" });
          if (call.id) slot.id = call.id;
          if (call.function?.name) slot.name += call.function.name;
          if (call.function?.arguments) slot.args += call.function.arguments;
        }
      }
      const toolCalls = calls.filter(Boolean).map((call) => ({
        id: call.id || toolCallId(),
        name: call.name,
        args: call.args ? (JSON.parse(call.args) as Record<string, unknown>) : {},
        type: "tool_call" as const,
      }));
      return new AIMessage({ content, tool_calls: toolCalls });
    },
  };
}

export function modelFor(settings: ModelSettings): ChatModel {
  return settings.provider === "openai" ? openAIModel(settings) : localModel;
}

/**
 * The model ids an OpenAI-compatible endpoint lists at `GET /models`
 * (`{"data": [{"id": …}, …]}`, as OpenAI, Ollama, LM Studio and vLLM answer),
 * sorted. Throws an error that says why when it offers no list: many
 * endpoints do not, and the model's name is then typed.
 */
export async function listModels(settings: Pick<ModelSettings, "baseUrl" | "apiKey">): Promise<string[]> {
  const refused = connectRefusal(settings.baseUrl, location.origin);
  if (refused) throw new PolicyRefusal(refused);
  const url = `${settings.baseUrl.replace(/\/+$/, "")}/models`;
  const response = await fetch(url, {
    headers: settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {},
  });
  if (!response.ok) {
    const detail = endpointMessage(await response.text().catch(() => ""));
    throw new Error(`it answered ${response.status} ${response.statusText}${detail ? `: ${detail}` : ""}`);
  }
  const body = (await response.json().catch(() => undefined)) as { data?: unknown } | undefined;
  if (!Array.isArray(body?.data)) throw new Error("its answer is not a list of models");
  const ids = body.data.flatMap((entry: unknown) => {
    const id = (entry as { id?: unknown } | null)?.id;
    return typeof id === "string" && id ? [id] : [];
  });
  if (ids.length === 0) throw new Error("it lists no models");
  return [...new Set(ids)].sort();
}
