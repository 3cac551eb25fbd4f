/**
 * Checkpoint values as the JSON-able data the page helpers return: messages
 * as `{ type, content, id?, … }`, delta channels replayed from their history
 * with the same rules as LangGraph's `messagesDeltaReducer`, working on the
 * plain records of plain-load.ts instead of LangChain classes.
 */
import { isDeltaSnapshot, type CheckpointPendingWrite } from "@langchain/langgraph-checkpoint";
import { toBase64 } from "../core/bytes.js";
import { LangChainRecord, isConstructorRecord } from "./plain-load.js";

/** LangChain message classes (and their chunks) by the `type` their `getType()` gives. */
const MESSAGE_TYPES: Record<string, string> = {
  AIMessage: "ai",
  AIMessageChunk: "ai",
  HumanMessage: "human",
  HumanMessageChunk: "human",
  SystemMessage: "system",
  SystemMessageChunk: "system",
  ToolMessage: "tool",
  ToolMessageChunk: "tool",
  FunctionMessage: "function",
  FunctionMessageChunk: "function",
  ChatMessage: "generic",
  ChatMessageChunk: "generic",
  RemoveMessage: "remove",
};

/** A message as data: what `PageThreadState` gives for each LangChain message. */
export interface MessageData {
  type: string;
  content: unknown;
  id?: string;
  name?: string;
  tool_calls?: unknown;
  tool_call_id?: unknown;
  additional_kwargs?: unknown;
  [key: string]: unknown;
}

/** The message a constructor record describes, or undefined when it is not a message. */
function messageOf(record: LangChainRecord["record"], depth: number): MessageData | undefined {
  const type = MESSAGE_TYPES[record.id[record.id.length - 1]!];
  if (!type || !record.id.includes("messages")) return undefined;
  return messageData(type, record.kwargs, depth);
}

/** A message's data from its type and fields (a record's kwargs, or a message-like's own). */
function messageData(type: string, kwargs: Record<string, unknown>, depth: number): MessageData {
  const data: MessageData = { type, content: toData(kwargs.content ?? "", depth + 1) };
  if (typeof kwargs.id === "string") data.id = kwargs.id;
  if (typeof kwargs.name === "string") data.name = kwargs.name;
  if (Array.isArray(kwargs.tool_calls) && kwargs.tool_calls.length > 0) {
    data.tool_calls = toData(kwargs.tool_calls, depth + 1);
  }
  if (kwargs.tool_call_id !== undefined) data.tool_call_id = kwargs.tool_call_id;
  const extra = kwargs.additional_kwargs;
  if (typeof extra === "object" && extra !== null && Object.keys(extra).length > 0) {
    data.additional_kwargs = toData(extra, depth + 1);
  }
  madeFromMessages.add(data);
  return data;
}

/** Data {@link toData} made from a LangChain message (a plain `{ type }` object of the app's is not one). */
const madeFromMessages = new WeakSet<object>();

/** True for message data made by {@link toData}. */
function isMessageData(value: unknown): value is MessageData {
  return typeof value === "object" && value !== null && madeFromMessages.has(value);
}

/** Any value as JSON-able data (undefined is dropped from objects, null in arrays). */
export function toData(value: unknown, depth = 0): unknown {
  if (depth > 200) return "[too deep]";
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return value.toString();
  if (typeof value !== "object") return undefined;
  const record = value instanceof LangChainRecord ? value.record : isConstructorRecord(value) ? value : undefined;
  if (record) return messageOf(record, depth) ?? toData(record.kwargs, depth + 1);
  if (isDeltaSnapshot(value)) return toData((value as { value: unknown }).value, depth + 1);
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return { $bytes: toBase64(value) };
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (value instanceof Set) return [...value].map((item) => toData(item, depth + 1) ?? null);
  if (value instanceof Map) {
    const entries = [...value];
    return entries.every(([key]) => typeof key === "string")
      ? Object.fromEntries(entries.map(([key, item]) => [key, toData(item, depth + 1)]))
      : entries.map(([key, item]) => [toData(key, depth + 1), toData(item, depth + 1)]);
  }
  if (Array.isArray(value)) return value.map((item) => toData(item, depth + 1) ?? null);
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === "function") return toData(withJson.toJSON(), depth + 1);
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const data = toData(item, depth + 1);
    if (data !== undefined) out[key] = data;
  }
  return out;
}

/** `[true, value]` for an `Overwrite` (class or wire shape). */
function overwriteOf(value: unknown): [boolean, unknown] {
  if (typeof value === "object" && value !== null) {
    if ("__overwrite__" in value) return [true, (value as Record<string, unknown>).__overwrite__];
    const record = value as { type?: unknown; value?: unknown; lg_name?: unknown };
    if ((record.type === "__overwrite__" || record.lg_name === "Overwrite") && "value" in record)
      return [true, record.value];
  }
  return [false, undefined];
}

/**
 * `messagesDeltaReducer` on message data: a message with a known id
 * replaces it in place, a `remove` deletes it (the id `__remove_all__`
 * clears everything so far), anything else is appended.
 */
export function reduceMessages(state: readonly MessageData[], writes: readonly MessageData[]): MessageData[] {
  const result: (MessageData | null)[] = [...state];
  const index = new Map<string, number>();
  state.forEach((message, i) => message.id !== undefined && index.set(message.id, i));
  for (const message of writes) {
    const id = message.id;
    if (message.type === "remove" && id === "__remove_all__") {
      result.length = 0;
      index.clear();
    } else if (id === undefined) {
      result.push(message);
    } else if (message.type === "remove") {
      const at = index.get(id);
      if (at !== undefined) result[at] = null;
      index.delete(id);
    } else if (index.has(id)) {
      result[index.get(id)!] = message;
    } else {
      index.set(id, result.length);
      result.push(message);
    }
  }
  return result.filter((message): message is MessageData => message !== null);
}

/**
 * What LangGraph's messages reducer makes of a message-like (already as data)
 * that is not a LangChain message: `coerceMessageLikeToMessage` of
 * @langchain/core (a string is a human message, `[role, content]`, or an
 * object with a `role` or `type`: user/human, assistant/ai, system, developer,
 * tool with a `tool_call_id`, remove with an `id`). Undefined when it is not one.
 */
function coerceMessageLike(value: unknown): MessageData | undefined {
  if (isMessageData(value)) return value;
  if (typeof value === "string") return messageData("human", { content: value }, 0);
  let fields: Record<string, unknown>;
  if (Array.isArray(value)) {
    if (value.length !== 2) return undefined;
    fields = { type: value[0], content: value[1] };
  } else if (typeof value === "object" && value !== null) {
    const { role, ...rest } = value as Record<string, unknown>;
    fields = typeof role === "string" ? { ...rest, type: role } : { ...rest };
  } else {
    return undefined;
  }
  const { type, ...rest } = fields;
  const message = (kind: string, own: Record<string, unknown> = rest) => messageData(kind, own, 0);
  if (type === "human" || type === "user") return message("human");
  if (type === "ai" || type === "assistant") {
    const calls = rest.tool_calls;
    return message("ai", Array.isArray(calls) ? { ...rest, tool_calls: calls.map(coerceToolCall) } : rest);
  }
  if (type === "system") return message("system");
  if (type === "developer") {
    const extra = typeof rest.additional_kwargs === "object" ? rest.additional_kwargs : {};
    return message("system", { ...rest, additional_kwargs: { ...extra, __openai_role__: "developer" } });
  }
  if (type === "tool" && "tool_call_id" in rest) return message("tool");
  if (type === "remove" && typeof rest.id === "string") return message("remove");
  return undefined;
}

/**
 * A message-like's tool call as LangChain's `_coerceToolCall` makes it: one
 * in OpenAI's form (`{ id, type: "function", function: { name, arguments } }`)
 * becomes `{ id, name, args, type: "tool_call" }`; anything else is kept.
 */
function coerceToolCall(call: unknown): unknown {
  const { id, type, function: fn } = (call ?? {}) as { id?: unknown; type?: unknown; function?: unknown };
  const { name, arguments: args } = (fn ?? {}) as { name?: unknown; arguments?: unknown };
  if (typeof id !== "string" || type !== "function" || typeof name !== "string" || typeof args !== "string") {
    return call;
  }
  try {
    return { id, name, args: JSON.parse(args) as unknown, type: "tool_call" };
  } catch {
    // LangChain throws on such arguments, and the app's getState with it: the kit shows the call as stored.
    return call;
  }
}

/**
 * Every item as message data when the list holds messages (some item is a
 * LangChain message or a `{ role | type, … }` message-like, and each item
 * coerces), else undefined: a delta channel of other values is left as it is.
 */
function asMessages(items: readonly unknown[]): MessageData[] | undefined {
  const messageish = (item: unknown) =>
    isMessageData(item) ||
    (typeof item === "object" && item !== null && !Array.isArray(item) && coerceMessageLike(item) !== undefined);
  if (!items.some(messageish)) return undefined;
  const coerced = items.map(coerceMessageLike);
  return coerced.every((item): item is MessageData => item !== undefined) ? coerced : undefined;
}

/**
 * A delta channel's value, as data, from its seed and writes, as
 * `DeltaChannel` does: the last Overwrite resets the base; the rest go
 * through the messages reducer when the channel holds messages (message-likes
 * coerced as LangGraph's reducer does), else are concatenated.
 */
export function replayDelta(seed: unknown, writes: readonly CheckpointPendingWrite[]): unknown[] {
  let base: unknown = isDeltaSnapshot(seed) ? (seed as { value: unknown }).value : seed;
  let values = writes.map((write) => write[2]);
  for (let i = values.length - 1; i >= 0; i--) {
    const [isOverwrite, value] = overwriteOf(values[i]);
    if (isOverwrite) {
      base = value ?? [];
      values = values.slice(i + 1);
      break;
    }
  }
  const current = (Array.isArray(base) ? base : base === undefined || base === null ? [] : [base]).map((item) =>
    toData(item),
  );
  const flat = values.flatMap((value) => (Array.isArray(value) ? value : [value])).map((item) => toData(item));
  // A MessagesDeltaValue channel is often fed message-likes (`{ role: "user", content }`), which
  // the app's reducer coerces: read as it does, an edit by id replaces rather than appends.
  const messages = asMessages([...current, ...flat]);
  if (messages) return reduceMessages(messages.slice(0, current.length), messages.slice(current.length));
  if (flat.length === 0) return current;
  return [...current, ...flat];
}
