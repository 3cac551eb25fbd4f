/**
 * A chat on `useStream` against the in-page Agent Server: messages stream as
 * they are generated, a reload rejoins the run it interrupted
 * (`reconnectOnMount`), a sent message can be edited (a fork from its parent
 * checkpoint) and its branches switched, and an approval asked through
 * `interruptWith` is answered here. The thread's id lives in the address
 * (`?thread=`), so a reload or a second tab opens the same thread.
 */
import { useState, type FormEvent } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import type { ApprovalRequest } from "./graph.js";
import { client } from "./server.js";

/** The thread named in the address, if any. */
function threadInAddress(): string | null {
  return new URLSearchParams(location.search).get("thread");
}

/** Names `threadId` in the address, without a navigation. */
function showThreadInAddress(threadId: string): void {
  const url = new URL(location.href);
  url.searchParams.set("thread", threadId);
  history.replaceState(null, "", url);
}

function text(message: Message): string {
  return typeof message.content === "string" ? message.content : JSON.stringify(message.content);
}

/** The chat. */
export function App() {
  const [threadId, setThreadId] = useState(threadInAddress);
  const thread = {
    threadId,
    onThreadId: (id: string) => {
      setThreadId(id);
      showThreadInAddress(id);
    },
  };
  // The README's useStream line, plus `thread`: the thread's id kept in the address.
  const stream = useStream({
    client,
    assistantId: "agent",
    fetchStateHistory: true,
    reconnectOnMount: true,
    ...thread,
  });
  const approval = stream.interrupt?.value as ApprovalRequest | undefined;
  const [editing, setEditing] = useState<string | null>(null);

  const send = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const input = event.currentTarget.elements.namedItem("text") as HTMLInputElement;
    const content = input.value.trim();
    if (content === "") return;
    input.value = "";
    // `enqueue`: a message sent while the thread runs (in this tab or another) waits its turn.
    void stream.submit({ messages: [{ type: "human", content }] }, { multitaskStrategy: "enqueue" });
  };

  return (
    <main>
      <h1>useStream on IndexedDB</h1>
      <p data-testid="status">
        {stream.isLoading ? "running" : "idle"} · {stream.history?.length ?? 0} checkpoints
      </p>
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
      {approval && (
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
