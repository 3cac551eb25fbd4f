/**
 * A chat on `useStream` against the in-page Agent Server: messages stream as
 * they are generated, a reload rejoins the run it interrupted
 * (`reconnectOnMount`), a sent message can be edited (a fork from its parent
 * checkpoint), an answer regenerated, and their branches switched; an
 * approval asked through `interruptWith` is answered here; Stop stops the
 * run. The threads are listed (`threads.search`, newest change first), can
 * be switched to and copied. The thread's id lives in the address
 * (`?thread=`), so a reload or a second tab opens the same thread.
 */
import { useCallback, useEffect, useRef, useState, type FormEvent } from "react";
import type { Message, Thread } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import type { ApprovalRequest } from "./graph.js";
import { client } from "./server.js";

/** The thread named in the address, if any. */
function threadInAddress(): string | null {
  return new URLSearchParams(location.search).get("thread");
}

/** Names `threadId` in the address (none: a new chat), without a navigation. */
function showThreadInAddress(threadId: string | null): void {
  const url = new URL(location.href);
  if (threadId === null) url.searchParams.delete("thread");
  else url.searchParams.set("thread", threadId);
  history.replaceState(null, "", url);
}

function text(message: Message): string {
  return typeof message.content === "string" ? message.content : JSON.stringify(message.content);
}

/** A thread's title in the list: its first message. */
function title(thread: Thread): string {
  const messages = (thread.values as { messages?: Message[] } | undefined)?.messages ?? [];
  return messages[0] ? text(messages[0]) : "(new chat)";
}

/** The threads, newest change first, read again when `refresh` is called and every second (other tabs). */
function useThreads() {
  const [threads, setThreads] = useState<Thread[]>([]);
  const asked = useRef(0);
  const refresh = useCallback(() => {
    // Only the latest search is shown: an earlier one answered later would show the list as it was.
    const search = ++asked.current;
    client.threads.search({ limit: 20, sortBy: "updated_at", sortOrder: "desc" }).then(
      (found) => search === asked.current && setThreads(found),
      () => undefined,
    );
  }, []);
  useEffect(() => {
    refresh();
    const timer = setInterval(refresh, 1_000);
    return () => clearInterval(timer);
  }, [refresh]);
  return { threads, refresh };
}

/** The chat. */
export function App() {
  const [threadId, setThreadId] = useState(threadInAddress);
  const { threads, refresh } = useThreads();
  const [errors, setErrors] = useState<string[]>([]);
  const open = (id: string | null) => {
    setThreadId(id);
    showThreadInAddress(id);
  };
  const thread = { threadId, onThreadId: open };
  // The README's useStream line, plus `thread`: the thread's id kept in the address.
  const stream = useStream({
    client,
    assistantId: "agent",
    fetchStateHistory: true,
    reconnectOnMount: true,
    ...thread,
    onCreated: refresh,
    onFinish: refresh,
    onStop: refresh,
    onError: (error: unknown) => {
      setErrors((shown) => [...shown, error instanceof Error ? error.name : String(error)]);
      refresh();
    },
  });
  const approval = stream.interrupt?.value as ApprovalRequest | undefined;
  const [editing, setEditing] = useState<string | null>(null);

  const send = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const input = event.currentTarget.elements.namedItem("text") as HTMLInputElement;
    const content = input.value.trim();
    if (content === "") return;
    input.value = "";
    const message = { type: "human" as const, content, id: crypto.randomUUID() };
    // `enqueue`: a message sent while the thread runs (in this tab or another) waits its turn.
    // Shown at once (optimistic values), before the server has it.
    void stream.submit(
      { messages: [message] },
      {
        multitaskStrategy: "enqueue",
        optimisticValues: (values) => ({ ...values, messages: [...((values.messages as Message[]) ?? []), message] }),
      },
    );
  };

  const copy = async () => {
    if (threadId === null) return;
    const copied = await client.threads.copy(threadId);
    refresh();
    open(copied.thread_id);
  };

  return (
    <main>
      <h1>useStream on IndexedDB</h1>
      <nav>
        <button type="button" onClick={() => open(null)}>
          New chat
        </button>
        <ul>
          {threads.map((listed) => (
            <li key={listed.thread_id} data-testid="thread" data-thread={listed.thread_id} data-status={listed.status}>
              <button type="button" aria-current={listed.thread_id === threadId} onClick={() => open(listed.thread_id)}>
                {title(listed)}
              </button>{" "}
              <span data-testid="thread-status">{listed.status}</span>
            </li>
          ))}
        </ul>
      </nav>
      <p data-testid="status">
        {stream.isLoading ? "running" : "idle"} · {stream.history?.length ?? 0} checkpoints
      </p>
      {threadId !== null && (
        <button type="button" onClick={() => void copy()}>
          Copy thread
        </button>
      )}
      <ol>
        {stream.messages.map((message, index) => {
          const meta = stream.getMessagesMetadata(message, index);
          const parent = meta?.firstSeenState?.parent_checkpoint;
          const options = meta?.branchOptions ?? [];
          const at = meta?.branch === undefined ? -1 : options.indexOf(meta.branch);
          return (
            <li key={message.id ?? index} data-testid="message" data-role={message.type}>
              {editing === message.id ? (
                <form
                  onSubmit={(event) => {
                    event.preventDefault();
                    const input = event.currentTarget.elements.namedItem("edit") as HTMLInputElement;
                    setEditing(null);
                    // A fork: the edited message is sent from the checkpoint before the original.
                    void stream.submit({ messages: [{ type: "human", content: input.value }] }, { checkpoint: parent });
                  }}
                >
                  <input name="edit" aria-label="Edited message" defaultValue={text(message)} />
                  <button type="submit">Save</button>
                </form>
              ) : (
                <span data-testid="text">{text(message)}</span>
              )}
              {message.type === "human" && parent && editing !== message.id && (
                <button type="button" onClick={() => setEditing(message.id ?? null)}>
                  Edit
                </button>
              )}
              {message.type === "ai" && parent && !stream.isLoading && (
                // A fork too: the graph runs again from the checkpoint before this answer.
                <button type="button" onClick={() => void stream.submit(undefined, { checkpoint: parent })}>
                  Regenerate
                </button>
              )}
              {options.length > 1 && (
                <span data-testid="branches">
                  <button type="button" disabled={at <= 0} onClick={() => stream.setBranch(options[at - 1]!)}>
                    Previous
                  </button>
                  {at + 1} / {options.length}
                  <button
                    type="button"
                    disabled={at >= options.length - 1}
                    onClick={() => stream.setBranch(options[at + 1]!)}
                  >
                    Next
                  </button>
                </span>
              )}
            </li>
          );
        })}
      </ol>
      {approval?.question !== undefined && (
        <section data-testid="approval">
          <p>Approve “{approval.question}”?</p>
          <button type="button" onClick={() => void stream.submit(undefined, { command: { resume: "yes" } })}>
            Approve
          </button>
        </section>
      )}
      {stream.error !== undefined && stream.error !== null && (
        <p role="alert" data-testid="error">
          {stream.error instanceof Error ? `${stream.error.name}: ${stream.error.message}` : String(stream.error)}
        </p>
      )}
      <p data-testid="errors" hidden>
        {errors.join(",")}
      </p>
      <form onSubmit={send}>
        <input name="text" aria-label="Message" data-testid="composer" autoComplete="off" />
        <button type="submit">Send</button>
        {stream.isLoading && (
          <button type="button" onClick={() => void stream.stop()}>
            Stop
          </button>
        )}
      </form>
    </main>
  );
}
