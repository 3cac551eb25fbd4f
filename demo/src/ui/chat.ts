/**
 * The conversation: messages, the streaming answer, the approval card, the
 * banner shown while looking at an older checkpoint, and the composer.
 */
import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import { secondPerson } from "../model.js";
import { h, replace } from "./dom.js";
import { icon } from "./icons.js";

export interface ChatActions {
  onSend(text: string): void;
  onApprove(): void;
  onReject(): void;
  onFork(): void;
  onBackToLatest(): void;
}

/** Where the view stands when it is not at the thread's latest state. */
export interface Viewing {
  step: number;
  messageCount: number;
}

function text(message: BaseMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
}

function toolCallLabel(name: string, args: Record<string, unknown>): string {
  if (name === "save_memory") return `Wants to save a memory: “${String(args.memory ?? "")}”`;
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

/**
 * One message as DOM. A draft (a run's state before its checkpoint is
 * committed) has no test id: a `message` on screen is one a reload keeps.
 */
function renderMessage(message: BaseMessage, draft: boolean): Node[] {
  const type = message.getType();
  const testid = draft ? undefined : "message";
  if (type === "human") {
    return [
      h("div", { class: `message user${draft ? " draft" : ""}`, testid, dataset: { role: "user" } }, text(message)),
    ];
  }
  if (type === "tool") {
    return [h("div", { class: "tool-note", testid: "tool-result" }, toolResultLabel(message as ToolMessage))];
  }
  if (type !== "ai") return [];
  const nodes: Node[] = [];
  const body = text(message);
  if (body)
    nodes.push(
      h("div", { class: `message assistant${draft ? " draft" : ""}`, testid, dataset: { role: "assistant" } }, body),
    );
  for (const call of (message as AIMessage).tool_calls ?? []) {
    nodes.push(
      h("div", { class: "tool-note", testid: "tool-call" }, icon("tool"), toolCallLabel(call.name, call.args)),
    );
  }
  return nodes;
}

const PLACEHOLDER = "Message the assistant… (Enter sends, Shift+Enter: new line)";

export function createChat(actions: ChatActions) {
  const log = h("div", {
    class: "messages",
    role: "log",
    "aria-label": "Conversation",
    "aria-live": "polite",
    tabIndex: 0,
  });
  const banner = h("div", { class: "viewing-banner", hidden: true });
  const approval = h("div", { class: "approval-slot" });
  const error = h("div", { class: "error-banner", role: "alert", hidden: true });
  const composer = h("textarea", {
    id: "composer",
    testid: "composer",
    rows: 1,
    placeholder: PLACEHOLDER,
    "aria-label": "Message",
    autocomplete: "off",
  });
  const send = h("button", { class: "primary", testid: "send", type: "submit", "aria-label": "Send message" }, "Send");
  const form = h("form", { class: "composer" }, composer, send);
  let streaming: HTMLDivElement | undefined;
  let disabledReason: string | undefined;

  function submit(): void {
    const value = composer.value.trim();
    if (!value || disabledReason) return;
    composer.value = "";
    autosize();
    actions.onSend(value);
  }
  function autosize(): void {
    composer.style.height = "auto";
    composer.style.height = `${Math.min(composer.scrollHeight, 200)}px`;
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  composer.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  composer.addEventListener("input", autosize);

  const el = h("section", { class: "chat", "aria-label": "Chat" }, banner, log, approval, error, form);

  function scrollToEnd(): void {
    log.scrollTop = log.scrollHeight;
  }

  return {
    el,
    focus(): void {
      composer.focus();
    },
    /** Shows these messages (the streaming answer, if any, is dropped); `draft`: not committed yet. */
    showMessages(messages: BaseMessage[], draft = false): void {
      streaming = undefined;
      const nodes = messages.flatMap((message) => renderMessage(message, draft));
      if (nodes.length === 0) {
        nodes.push(
          h(
            "div",
            { class: "welcome" },
            h("h2", {}, "A LangGraph agent in your browser"),
            h(
              "p",
              {},
              "Everything runs in this page and is kept in IndexedDB: reload and the conversation is still here. Try “remember that my favourite colour is teal”, then ask “what do you remember about me?” in another thread.",
            ),
          ),
        );
      }
      replace(log, ...nodes);
      scrollToEnd();
    },
    /** Adds the user's message at once, before the run echoes it. */
    addPendingUser(value: string): void {
      log.querySelector(".welcome")?.remove();
      log.append(h("div", { class: "message user draft" }, value));
      scrollToEnd();
    },
    appendToken(token: string): void {
      if (!streaming) {
        streaming = h("div", { class: "message assistant streaming", "aria-busy": "true" });
        log.append(streaming);
      }
      streaming.textContent += token;
      scrollToEnd();
    },
    showApproval(calls: { name: string; args: Record<string, unknown> }[] | undefined, disabled = false): void {
      if (!calls || calls.length === 0) {
        replace(approval);
        return;
      }
      const memories = calls.map((call) => String(call.args.memory ?? ""));
      replace(
        approval,
        h(
          "section",
          { class: "approval", testid: "approval", role: "region", "aria-label": "Approval needed" },
          h("h3", {}, "Save to long-term memory?"),
          h("p", {}, "The assistant wants to remember:"),
          h("ul", {}, ...memories.map((memory) => h("li", { class: "memory-text" }, `“${secondPerson(memory)}”`))),
          h(
            "div",
            { class: "actions" },
            h(
              "button",
              { class: "primary", type: "button", testid: "approve", disabled, onclick: () => actions.onApprove() },
              "Approve",
            ),
            h("button", { type: "button", testid: "reject", disabled, onclick: () => actions.onReject() }, "Reject"),
          ),
        ),
      );
      scrollToEnd();
    },
    /** Shows or hides the "viewing an older checkpoint" banner. */
    showViewing(viewing: Viewing | undefined): void {
      banner.hidden = !viewing;
      if (!viewing) {
        replace(banner);
        return;
      }
      replace(
        banner,
        h("span", {}, `Viewing the state at step ${viewing.step} (${viewing.messageCount} messages). `),
        h(
          "button",
          { class: "primary", type: "button", testid: "fork", onclick: () => actions.onFork() },
          "Fork from here",
        ),
        h("button", { type: "button", onclick: () => actions.onBackToLatest() }, "Back to latest"),
      );
    },
    setDisabled(reason: string | undefined): void {
      disabledReason = reason;
      composer.disabled = Boolean(reason);
      send.disabled = Boolean(reason);
      composer.placeholder = reason ?? PLACEHOLDER;
    },
    showError(message: string | undefined): void {
      error.hidden = !message;
      replace(error, message ?? "");
    },
  };
}

export type Chat = ReturnType<typeof createChat>;
