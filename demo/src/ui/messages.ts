/**
 * One message as DOM: user messages as plain text (with Edit), the
 * assistant's as sanitized Markdown (the last one with Regenerate), tool
 * calls and results as short notes.
 */
import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import { SAVE_MEMORY, createdAt, isStopped } from "../agent.js";
import type { BranchPoint } from "../branches.js";
import { momentText } from "../clock.js";
import { h } from "./dom.js";
import { icon, type IconName } from "./icons.js";
import { copyTo, decorateCodeBlocks } from "./code-blocks.js";
import { renderMarkdown } from "./markdown.js";

/** The plain text of a message's content. */
export function text(message: BaseMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
}

/**
 * A tool call's note: what the assistant is doing, then, once its result is in, what it did.
 * A memory is quoted as the call has it, the words the approval card's editor holds and the
 * result's "Saved: …" repeats: reworded ("my" → "your") it read as a second, different memory.
 */
function toolCallLabel(name: string, args: Record<string, unknown>, done: boolean): string {
  if (name === SAVE_MEMORY) {
    const memory = `“${String(args.memory ?? "")}”`;
    return done ? `Asked to save a memory: ${memory}` : `Wants to save a memory: ${memory}`;
  }
  if (name === "recall_memories") return done ? "Looked up memories" : "Looking up memories…";
  return done ? `Called ${name}` : `Calling ${name}…`;
}

function toolResultLabel(message: ToolMessage): string {
  const content = text(message);
  if (message.name === "recall_memories") {
    try {
      const count = (JSON.parse(content) as unknown[]).length;
      return `Found ${count} ${count === 1 ? "memory" : "memories"}`;
    } catch {
      return content;
    }
  }
  return message.status === "error" ? `✗ ${content}` : `✓ ${content}`;
}

/** A message's action: an icon and a word, big enough to find and to hit. */
function toolButton(testid: string, name: IconName, label: string, description: string, onclick: () => void) {
  return h(
    "button",
    { type: "button", class: "tool", testid, "aria-label": description, onclick },
    icon(name),
    h("span", {}, label),
  );
}

/** Copies the message as written (an answer's Markdown source). */
function copyButton(body: string): HTMLButtonElement {
  const button = toolButton("copy", "copy", "Copy", "Copy this message", () => copyTo(button, () => body));
  return button;
}

/** When the message was written, if it says: the time (today) or the date, the full moment on hover. */
function timeOf(message: BaseMessage): HTMLElement | undefined {
  const at = createdAt(message);
  if (at === undefined) return undefined;
  const date = new Date(at);
  return h(
    "time",
    { class: "message-time", testid: "message-time", dateTime: date.toISOString(), title: date.toLocaleString() },
    momentText(date),
  );
}

/** A pasted wall of text folds to a few lines, with "Show more": the conversation around it stays readable. */
const FOLD_CHARS = 1_200;
const FOLD_LINES = 12;
function isLong(body: string): boolean {
  return body.length > FOLD_CHARS || body.split("\n").length > FOLD_LINES;
}

function foldButton(bubble: HTMLElement): HTMLButtonElement {
  bubble.classList.add("folded");
  const label = h("span", {}, "Show more");
  const button = h("button", { type: "button", class: "tool", testid: "show-more", "aria-expanded": "false" }, label);
  button.addEventListener("click", () => {
    const folded = bubble.classList.toggle("folded");
    button.setAttribute("aria-expanded", String(!folded));
    label.textContent = folded ? "Show more" : "Show less";
  });
  return button;
}

/** What a message may offer, decided by the chat (only at the latest state, when idle). */
export interface MessageOptions {
  draft: boolean;
  /** Its position in the thread's messages (what Edit forks before). */
  index: number;
  onEdit?: (index: number, bubble: HTMLElement) => void;
  onRegenerate?: () => void;
  /** Tool calls whose result is in the thread: their notes speak in the past. */
  answered?: ReadonlySet<string>;
  /** A branch switcher to show under the message, if branches diverge there. */
  branches?: Node;
}

/**
 * One message as DOM. A draft (a run's state before its checkpoint is
 * committed) has no test id: a `message` on screen is one a reload keeps.
 */
export function renderMessage(message: BaseMessage, options: MessageOptions): Node[] {
  const type = message.getType();
  const { draft } = options;
  const testid = draft ? undefined : "message";
  if (type === "human") {
    // textContent only: what the user typed is never parsed as HTML or Markdown.
    const body = text(message);
    const bubble = h(
      "div",
      { class: `message user${draft ? " draft" : ""}`, testid, dataset: { role: "user", index: options.index } },
      body,
    );
    const tools = h(
      "div",
      { class: "message-tools user" },
      isLong(body) && foldButton(bubble),
      !draft && copyButton(body),
      options.onEdit &&
        toolButton("edit", "pencil", "Edit", "Edit this message", () => options.onEdit!(options.index, bubble)),
      options.branches,
      timeOf(message),
    );
    return tools.childElementCount ? [bubble, tools] : [bubble];
  }
  if (type === "tool") {
    return [h("div", { class: "tool-note", testid: "tool-result" }, toolResultLabel(message as ToolMessage))];
  }
  if (type !== "ai") return [];
  const nodes: Node[] = [];
  const body = text(message);
  if (body) {
    nodes.push(
      h(
        "div",
        {
          class: `message assistant markdown${draft ? " draft" : ""}`,
          testid,
          dataset: { role: "assistant", index: options.index },
        },
        renderMarkdown(body),
      ),
    );
    decorateCodeBlocks(nodes[0] as HTMLElement);
  }
  for (const call of (message as AIMessage).tool_calls ?? []) {
    const done = options.answered?.has(call.id ?? "") ?? false;
    nodes.push(
      h(
        "div",
        { class: "tool-note", testid: "tool-call", dataset: { done: String(done) } },
        icon("tool"),
        toolCallLabel(call.name, call.args, done),
      ),
    );
  }
  const stopped = isStopped(message);
  if (stopped) {
    // Kept with its marker, also once later turns follow; the latest one offers Retry (a new answer).
    nodes.push(
      h(
        "div",
        { class: "turn-status stopped", testid: "stopped-note" },
        h("p", {}, body ? "You stopped this answer." : "You stopped this answer before it began."),
        options.onRegenerate &&
          h(
            "button",
            { type: "button", class: "primary", testid: "retry", onclick: () => options.onRegenerate!() },
            "Retry",
          ),
      ),
    );
  }
  const tools = h(
    "div",
    { class: "message-tools" },
    !draft && body && copyButton(body),
    !stopped &&
      body &&
      options.onRegenerate &&
      toolButton("regenerate", "refresh", "Regenerate", "Regenerate this answer", () => options.onRegenerate!()),
    // A regenerated answer's versions.
    options.branches,
    body && timeOf(message),
  );
  if (tools.childElementCount) nodes.push(tools);
  return nodes;
}

/**
 * "‹ 2 / 3 ›" under a message where branches diverge (it was edited, or its
 * answer regenerated). `onSwitch` gets the newest checkpoint of the branch
 * asked for: the conversation continues there.
 */
export function branchSwitcher(point: BranchPoint, onSwitch: (headId: string) => void): HTMLElement {
  const count = point.heads.length;
  const go = (to: number) => onSwitch(point.heads[to]!);
  return h(
    "div",
    { class: "branch-switcher", role: "group", "aria-label": "Versions of this message", testid: "branch-switcher" },
    h(
      "button",
      {
        type: "button",
        class: "tool",
        testid: "branch-previous",
        "aria-label": "Previous version",
        disabled: point.current === 0,
        onclick: () => go(point.current - 1),
      },
      "‹",
    ),
    h("span", { class: "branch-position", testid: "branch-position" }, `${point.current + 1} / ${count}`),
    h(
      "button",
      {
        type: "button",
        class: "tool",
        testid: "branch-next",
        "aria-label": "Next version",
        disabled: point.current === count - 1,
        onclick: () => go(point.current + 1),
      },
      "›",
    ),
  );
}

/** An inline editor in place of a user message; Escape or Cancel puts the message back. */
export function editor(original: string, done: (value: string | undefined) => void): HTMLFormElement {
  const field = h("textarea", { class: "edit-field", testid: "edit-text", "aria-label": "Edited message", rows: 3 });
  field.value = original;
  const form = h(
    "form",
    { class: "message-editor" },
    field,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "primary", testid: "edit-save" }, "Send edited message"),
      h("button", { type: "button", onclick: () => done(undefined) }, "Cancel"),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = field.value.trim();
    done(value && value !== original ? value : undefined);
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      done(undefined);
    }
  });
  queueMicrotask(() => field.focus());
  return form;
}
