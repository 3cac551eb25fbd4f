/**
 * The chat log's messages, drawn incrementally: a redraw (a run's step, its
 * end, another tab's change, the branch switchers) gives every message of
 * the thread, but only those that changed are rendered and put in the log;
 * the others keep their nodes, untouched. Rendering all of them each time
 * (Markdown, sanitizing, layout) took tasks of 101-272 ms at 300 turns, on
 * every step of a turn. Untouched nodes also keep what is in them: the
 * focus, a selection, an open message editor (see ui/chat.ts).
 */
import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import { createdAt, isStopped } from "../agent.js";
import { text } from "./messages.js";

/** How a message is offered (ui/messages.ts `MessageOptions`), as far as it changes its nodes. */
export interface DrawnAs {
  /** Not committed yet (a run's step): a message drawn committed before stays committed. */
  draft: boolean;
  regenerable: boolean;
  /** Tool calls whose result is in the thread (their notes speak in the past). */
  answered: ReadonlySet<string>;
  /** The branch switcher under it, if any: a new one is a new drawing. */
  branches: Node | undefined;
}

/** One message as drawn: what it was drawn from, and its nodes (its bubble first, if it has one). */
interface Drawn {
  /** What of the message its nodes show: its text, and the rest ({@link contentOf}). */
  text: string;
  content: string;
  draft: boolean;
  regenerable: boolean;
  branches: Node | undefined;
  nodes: Node[];
}

/** Everything of `message` that its nodes show but its text, as one string to compare (its text is compared as is). */
function contentOf(message: BaseMessage, answered: ReadonlySet<string>): string {
  const calls = ((message as AIMessage).tool_calls ?? []).map((call) => [
    call.name,
    call.args,
    answered.has(call.id ?? ""),
  ]);
  const tool = message.getType() === "tool" ? [(message as ToolMessage).name, (message as ToolMessage).status] : [];
  return JSON.stringify([message.getType(), message.id, createdAt(message), isStopped(message), calls, tool]);
}

/**
 * Makes `parent`'s children `desired`, in order, touching only what differs:
 * a child in place stays (no removal and insertion, which would take its
 * focus away); children not desired are removed.
 */
export function patchChildren(parent: Element, desired: readonly Node[]): void {
  const wanted = new Set(desired);
  let cursor = parent.firstChild;
  for (const node of desired) {
    while (cursor && !wanted.has(cursor)) {
      const next: ChildNode | null = cursor.nextSibling;
      cursor.remove();
      cursor = next;
    }
    if (node === cursor) cursor = cursor.nextSibling;
    else parent.insertBefore(node, cursor);
  }
  while (cursor) {
    const next: ChildNode | null = cursor.nextSibling;
    cursor.remove();
    cursor = next;
  }
}

/** The messages drawn so far, by their index in the thread. */
export function createMessageList() {
  let drawn: Drawn[] = [];
  return {
    /**
     * The nodes of each message: the ones drawn before where the message
     * and how it is offered are the same, else `render`'s. (Whether it can
     * be edited is not drawn anew: the chat hides its Edit over an older checkpoint.)
     */
    update(
      messages: readonly BaseMessage[],
      as: (index: number) => DrawnAs,
      render: (message: BaseMessage, index: number, as: DrawnAs) => Node[],
    ): Node[][] {
      drawn = messages.map((message, index) => {
        const how = as(index);
        const content = contentOf(message, how.answered);
        const body = text(message);
        const before = drawn[index];
        const same = before?.content === content && before.text === body;
        // The run's state repeats the thread's messages: those drawn from the saver are no drafts.
        if (same && !before.draft) how.draft = false;
        if (same && before.draft === how.draft && before.regenerable === how.regenerable) {
          if (before.branches === how.branches) return before;
        }
        return { text: body, content, ...how, nodes: render(message, index, how) };
      });
      return drawn.map((entry) => entry.nodes);
    },
    /** The nodes message `index` is drawn as, if it is. */
    nodesAt(index: number): readonly Node[] | undefined {
      return drawn[index]?.nodes;
    },
    /** Forgets the messages from `index` on (their nodes were changed in place): drawn anew next time. */
    forget(index = 0): void {
      drawn = drawn.slice(0, index);
    },
  };
}

/** The messages drawn in a chat log. */
export type MessageList = ReturnType<typeof createMessageList>;
