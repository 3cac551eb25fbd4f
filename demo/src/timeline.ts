/**
 * The history panel's rows, read straight from the saver's `list()` (one
 * page of checkpoints at a time, newest first) instead of the graph's
 * `getStateHistory()`, which rebuilds every checkpoint's whole state: 26 s
 * for a 100-turn thread here, against 0.4 s for the list. A row needs only
 * what its own checkpoint holds (the input, the writes of the step it
 * started, a snapshot after an update); message counts are replayed
 * forward once the oldest checkpoint is in.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { isDeltaSnapshot, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { momentText } from "./clock.js";

/** One checkpoint, as the history shows it. */
export interface Row {
  id: string;
  parentId?: string;
  step: number;
  /** `input`, `loop` or `update` (a fork, or a rejection written as the tools node). */
  source: string;
  /** The nodes this checkpoint is about to run. */
  next: string[];
  /** When it was written (the checkpoint's ISO time), and that moment as the app writes it (clock.ts). */
  ts: string;
  time: string;
  paused: boolean;
  /** The user's message, on an input checkpoint. */
  input?: string;
  /** Messages written by the step that started from this checkpoint. */
  added: BaseMessage[];
  /** The whole message list, when the checkpoint stores it (after an update). */
  full?: BaseMessage[];
  /** Known once the chain down to the first checkpoint is read. */
  messageCount?: number;
}

function isMessage(value: unknown): value is BaseMessage {
  return typeof (value as { getType?: unknown } | null)?.getType === "function";
}

function textOf(message: BaseMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
}

/** The row of one checkpoint tuple. */
export function rowOf(tuple: CheckpointTuple): Row {
  const values = tuple.checkpoint.channel_values as Record<string, unknown>;
  const next = Object.keys(values)
    .filter((key) => key.startsWith("branch:to:"))
    .map((key) => key.slice("branch:to:".length));
  const start = values.__start__ as { messages?: unknown[] } | undefined;
  const human = start?.messages?.find(isMessage);
  const messages = values.messages;
  return {
    id: tuple.checkpoint.id,
    parentId: tuple.parentConfig?.configurable?.checkpoint_id as string | undefined,
    step: tuple.metadata?.step ?? 0,
    source: String(tuple.metadata?.source ?? ""),
    next,
    ts: tuple.checkpoint.ts,
    // As the chat writes a message's time (clock.ts), from formatters built once.
    time: tuple.checkpoint.ts ? momentText(new Date(tuple.checkpoint.ts)) : "",
    paused: next.includes("tools"),
    input: human ? textOf(human) : undefined,
    added: (tuple.pendingWrites ?? [])
      .filter(([, channel]) => channel === "messages")
      .flatMap(([, , value]) => (Array.isArray(value) ? value : [value]))
      .filter(isMessage),
    full: isDeltaSnapshot(messages) ? (messages.value as unknown[]).filter(isMessage) : undefined,
  };
}

/**
 * Fills in `messageCount` by replaying from the first checkpoint: a step
 * adds what its parent's step wrote; an input checkpoint has its parent's
 * messages (the input is applied by the next step); an update stores its list.
 */
export function countMessages(rows: Row[]): void {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const count = (row: Row): number | undefined => {
    if (row.messageCount !== undefined) return row.messageCount;
    if (row.full) return (row.messageCount = row.full.length);
    if (!row.parentId) return (row.messageCount = 0);
    const parent = byId.get(row.parentId);
    const before = parent && count(parent);
    if (before === undefined) return undefined;
    return (row.messageCount = row.source === "input" ? before : before + parent!.added.length);
  };
  // Oldest first, so the recursion stays shallow.
  for (let i = rows.length - 1; i >= 0; i--) count(rows[i]!);
}

/** A short, one-line preview. */
export function preview(value: string, length = 70): string {
  const line = value.replace(/\s+/g, " ").trim();
  return line.length > length ? `${line.slice(0, length - 1)}…` : line;
}

/** The last answer written in these rows (newest first), for a turn's preview. */
export function answerOf(rows: Row[]): string {
  for (const row of rows) {
    for (let i = row.added.length - 1; i >= 0; i--) {
      const message = row.added[i]!;
      if (message.getType() === "ai" && textOf(message)) return textOf(message);
    }
  }
  return "";
}
