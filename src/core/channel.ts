/**
 * Cross-tab plumbing as the package does it everywhere: the names of its
 * BroadcastChannels and Web Locks, made by one function, and channels
 * opened one way (none where the environment has none, never keeping a
 * Node process alive).
 *
 * A name is a protocol between tabs that may run different builds of an
 * app: two tabs that spell a name differently no longer see each other's
 * messages or wait for each other's locks. So the names below keep the
 * bytes they shipped with; only a new kind of name gets the current layout,
 * and a change of layout is a new version, never an edit of these strings.
 */

import { Listeners } from "./listeners.js";

/** What every cross-tab name of the package starts with. */
const PACKAGE = "langgraph-checkpoint-indexeddb";

/** Version of the name layout `<package>:v<n>:<database>:<kind>…` (messages carry their own `v`). */
const LAYOUT = 1;

/** A channel or lock of one database, by what it carries or guards. */
export type CrossTabName =
  /** Channel: the saver's change feed and key-change announcements (the store's too). */
  | { kind: "changes"; dbName: string }
  /** Channel: runs asking each other to stop, and run start/end notices. */
  | { kind: "runs"; dbName: string }
  /** Lock: held by the one run of a thread. */
  | { kind: "run"; dbName: string; threadId: string }
  /** Lock: held by a key change (rekey, changeKey). */
  | { kind: "key"; dbName: string }
  /** Channel: the syncing tab's status, for the others. */
  | { kind: "sync-status"; dbName: string }
  /** Lock: held by a sync round. */
  | { kind: "sync"; dbName: string }
  /** Channel: a local agent server's run events and requests to the server running a run. */
  | { kind: "agent-runs"; dbName: string }
  /** Lock: held by the local agent server that runs `runId`, from its start until its record is final. */
  | { kind: "agent-run"; dbName: string; runId: string }
  /** Lock and channel: the saver's write lease (who may write, and answer reads from memory), and requests for it. */
  | { kind: "write-lease"; dbName: string };

/**
 * The BroadcastChannel or Web Locks name of `name`. Names in the current
 * layout URI-encode each part, so a `:` in a database or thread id cannot
 * make two pairs collide.
 */
export function crossTabName(name: CrossTabName): string {
  const { kind, dbName } = name;
  // Three names shipped before the current layout, kept byte for byte:
  // - "changes", with the database name as given: tabs of every build since
  //   listen there for changes and key changes;
  // - "sync-status" (the version after "sync"): renamed, tabs of earlier
  //   builds would show their own stale status while another tab syncs;
  // - "sync", a lock shipped without a version, and kept so: a version in a
  //   lock's name splits the lock between builds, and a tab of this build
  //   and one of an earlier build would then sync one database at once.
  if (kind === "changes") return `${PACKAGE}:v1:${dbName}`;
  if (kind === "sync-status") return `${PACKAGE}:sync:v1:${dbName}`;
  if (kind === "sync") return `${PACKAGE}:sync:${dbName}`;
  const thread =
    name.kind === "run"
      ? `:${encodeURIComponent(name.threadId)}`
      : name.kind === "agent-run"
        ? `:${encodeURIComponent(name.runId)}`
        : "";
  return `${PACKAGE}:v${LAYOUT}:${encodeURIComponent(dbName)}:${kind}${thread}`;
}

/**
 * A BroadcastChannel named `name` that hands each message's data to
 * `onMessage`, or `undefined` where BroadcastChannel does not exist.
 */
export function openChannel(name: string, onMessage: (data: unknown) => void): BroadcastChannel | undefined {
  if (typeof BroadcastChannel === "undefined") return undefined;
  const channel = new BroadcastChannel(name);
  // Node keeps the process alive while a channel is open.
  (channel as unknown as { unref?: () => void }).unref?.();
  channel.onmessage = (event: MessageEvent<unknown>) => onMessage(event.data);
  return channel;
}

/**
 * Posts `message` on `channel` if there is one. A closed channel throws
 * (`InvalidStateError`): the message is dropped, since local listeners were
 * told already and nobody is left to tell on that channel.
 */
export function postQuietly(channel: BroadcastChannel | undefined, message: unknown): void {
  try {
    channel?.postMessage(message);
  } catch {
    // A closed channel: see above.
  }
}

/** Whether this is a page that is hidden now (a hidden page may be frozen at any time). */
export const pageHidden = (): boolean => typeof document !== "undefined" && document.visibilityState === "hidden";

/**
 * Calls `leaving` whenever the page is hidden, frozen or unloaded: after
 * that its timers may never run, and a frozen page answers no message.
 * Returns the function that stops it; nothing to watch where there is no
 * document (workers, Node).
 */
export function watchPage(leaving: () => void): () => void {
  if (typeof document === "undefined") return () => undefined;
  const onHide = () => pageHidden() && leaving();
  document.addEventListener("visibilitychange", onHide);
  document.addEventListener("freeze", leaving);
  globalThis.addEventListener("pagehide", leaving);
  return () => {
    document.removeEventListener("visibilitychange", onHide);
    document.removeEventListener("freeze", leaving);
    globalThis.removeEventListener("pagehide", leaving);
  };
}

/**
 * One endpoint on a channel of versioned messages: each message goes out
 * with `v: version`, and only messages of that version which `accept`
 * passes reach the listeners, so builds speaking another version ignore
 * each other instead of misreading. A BroadcastChannel delivers to every
 * other endpoint of the same name, in this context too, never back to the
 * sender.
 */
export class VersionedChannel<Message extends object> {
  readonly #channel: BroadcastChannel | undefined;
  readonly #listeners = new Listeners<Message>();
  readonly #version: number;

  constructor(name: string, version: number, accept: (message: Record<string, unknown>) => boolean) {
    this.#version = version;
    this.#channel = openChannel(name, (data) => {
      const message = data as Record<string, unknown> | null;
      if (typeof message !== "object" || message === null || message.v !== version || !accept(message)) return;
      this.#listeners.deliver(message as Message);
    });
  }

  /** Adds a listener; returns the function that removes it. */
  listen(listener: (message: Message) => void): () => void {
    return this.#listeners.add(listener);
  }

  /** Sends to every other endpoint (dropped once it is closed: nobody left to tell). */
  post(message: Message): void {
    postQuietly(this.#channel, { ...message, v: this.#version });
  }

  /** Closes the endpoint and drops its listeners. */
  close(): void {
    this.#listeners.clear();
    this.#channel?.close();
  }
}
