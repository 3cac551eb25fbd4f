/**
 * One message as DOM: user messages as plain text (with Edit), the
 * assistant's as sanitized Markdown (the last one with Regenerate), tool
 * calls and results as short notes.
 */
import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import type { BranchPoint } from "../branches.js";
import { secondPerson } from "../model.js";
import { h } from "./dom.js";
import { icon } from "./icons.js";
import { renderMarkdown } from "./markdown.js";

/** The plain text of a message's content. */
export function text(message: BaseMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
}

function toolCallLabel(name: string, args: Record<string, unknown>): string {
  if (name === "save_memory") return `Wants to save a memory: “${secondPerson(String(args.memory ?? ""))}”`;
  if (name === "recall_memories") return "Looking up memories…";
  return `Calling ${name}`;
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

/** What a message may offer, decided by the chat (only at the latest state, when idle). */
export interface MessageOptions {
  draft: boolean;
  /** Its position in the thread's messages (what Edit forks before). */
  index: number;
  onEdit?: (index: number, bubble: HTMLElement) => void;
  onRegenerate?: () => void;
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
    const bubble = h(
      "div",
      { class: `message user${draft ? " draft" : ""}`, testid, dataset: { role: "user", index: options.index } },
      text(message),
    );
    const tools = h(
      "div",
      { class: "message-tools user" },
      options.onEdit &&
        h(
          "button",
          {
            type: "button",
            class: "tool",
            testid: "edit",
            "aria-label": "Edit this message",
            onclick: () => options.onEdit!(options.index, bubble),
          },
          "Edit",
        ),
      options.branches,
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
  }
  for (const call of (message as AIMessage).tool_calls ?? []) {
    nodes.push(
      h("div", { class: "tool-note", testid: "tool-call" }, icon("tool"), toolCallLabel(call.name, call.args)),
    );
  }
  if (options.onRegenerate && body) {
    nodes.push(
      h(
        "div",
        { class: "message-tools" },
        h(
          "button",
          {
            type: "button",
            class: "tool",
            testid: "regenerate",
            "aria-label": "Regenerate this answer",
            onclick: () => options.onRegenerate!(),
          },
          "Regenerate",
        ),
      ),
    );
  }
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
