/**
 * Change notifications: listeners in this page, and other tabs of the same
 * origin over a BroadcastChannel. The channel name carries a protocol version
 * (as Dexie's `x-storagemutated-1`), so tabs running an older build of the
 * package ignore messages they would not understand instead of misreading them.
 */
import { crossTabName, openChannel, pageHidden, postQuietly, watchPage } from "../core/channel.js";
import { Listeners } from "../core/listeners.js";
import { nextTask } from "../core/tasks.js";

/** What happened to a thread. */
export type ChangeKind = "put" | "delete" | "copy" | "prune" | "delete-runs";

/** One change, as listeners receive it. */
export interface CheckpointChange {
  /** The thread that changed. */
  threadId: string;
  /** The namespace of the checkpoint, when one checkpoint is concerned. */
  checkpointNs?: string;
  /** The checkpoint written, when one checkpoint is concerned. */
  checkpointId?: string;
  kind: ChangeKind;
  /** True when the change was made in another tab (or another saver instance there). */
  remote: boolean;
}

/** A listener of {@link CheckpointChange}s. */
export type ChangeListener = (change: CheckpointChange) => void;

/** Version of the messages on the channel. */
const PROTOCOL = 1;

/** How long a put's notice waits for the notices after it: a frame. */
const PUT_WINDOW_MS = 16;

/**
 * The wire message: the change without `remote`, plus who sent it; or, with
 * `key` and no `change` (which older builds ignore), a key change.
 */
interface WireMessage {
  v: typeof PROTOCOL;
  sender: string;
  change?: Omit<CheckpointChange, "remote">;
  key?: true;
}

/**
 * Fans changes out to local listeners and, through a BroadcastChannel, to
 * other tabs. The channel opens on first use and closes with `close()`.
 * @internal
 */
export class ChangeFeed {
  readonly #channelName: string;
  readonly #listeners = new Listeners<CheckpointChange>();
  readonly #sender = Math.random().toString(36).slice(2);
  #channel: BroadcastChannel | undefined;
  readonly #onKey = new Set<() => void>();
  /**
   * Messages for other tabs not posted yet. They go out later, in order, one
   * message per change as always (tabs of older builds read each one), not
   * from the write that made them: a postMessage took about 0.13 ms of a 2 KB
   * put's 2-3 ms in Chromium (a profile of 1,200 puts), and the put resolved
   * only after it. A put's notice waits up to PUT_WINDOW_MS for the notices
   * after it, any other change's goes a task later with everything before
   * it: Chromium's first postMessage of a task costs 70-95 µs, each further
   * one 13-19 µs, so a loop of puts pays the first-post cost once per window
   * instead of once per put (docs/benchmarks.md, "The change notices of a
   * loop of puts"). In a worker or Node, where no event says the context is
   * about to go, the notices go at the end of the microtask checkpoint of the
   * write that made them. Another tab learns of a put up to a frame later. Nothing
   * there relies on that being sooner: the fresh reads and the put's proofs
   * rely on the write lease, not on notices; a put removes nothing, so the
   * delta-walk cache (delta-cache.ts), which another tab's delete, prune or
   * key change must reach soon, is told of those a task later as before;
   * apps show other tabs' new checkpoints a frame later. The outbox is posted
   * when the page is hidden, frozen or unloaded, and on close(), so a page
   * that goes right after a put still tells the others.
   */
  #outbox: WireMessage[] = [];
  /** The window's timer, while puts' notices wait in the outbox. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Removes the page listeners that post the outbox; set once a message waited. */
  #unwatch: (() => void) | undefined;

  constructor(dbName: string) {
    this.#channelName = crossTabName({ kind: "changes", dbName });
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: ChangeListener): () => void {
    const remove = this.#listeners.add(listener);
    this.#ensureChannel();
    return remove;
  }

  /** Tells local listeners and other tabs about a committed change. */
  emit(change: Omit<CheckpointChange, "remote">): void {
    this.#listeners.deliver({ ...change, remote: false });
    this.#post({ v: PROTOCOL, sender: this.#sender, change });
  }

  /** Calls `listener` when another tab or instance announces a key change (keeps the channel open). */
  onKeyChange(listener: () => void): void {
    this.#onKey.add(listener);
    this.#ensureChannel();
  }

  /** Tells other tabs and instances that the database's key record changed. */
  emitKeyChange(): void {
    this.#post({ v: PROTOCOL, sender: this.#sender, key: true });
  }

  #post(message: WireMessage): void {
    this.#outbox.push(message);
    this.#unwatch ??= watchPage(() => this.#flush());
    // Where there is no page (a worker, Node), nothing announces the end: an app terminates a worker as
    // soon as its run's last put resolves, which a task later, let alone a window later, often misses.
    // There the outbox goes out in this microtask checkpoint, before the writer's code goes on.
    if (typeof document === "undefined") queueMicrotask(() => this.#flush());
    // A hidden page's timers are throttled (Chromium runs them once a second, and more rarely after
    // minutes hidden): there a put's notice goes a task later, as any other change's.
    else if (message.change?.kind === "put" && !pageHidden())
      this.#timer ??= setTimeout(() => this.#flush(), PUT_WINDOW_MS);
    else void nextTask().then(() => this.#flush());
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#outbox.length === 0) return;
    const channel = this.#ensureChannel();
    for (const message of this.#outbox.splice(0)) postQuietly(channel, message);
  }

  /** Closes the channel, once the messages not posted yet are; a later emit or subscribe reopens it. */
  close(): void {
    this.#flush();
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#channel?.close();
    this.#channel = undefined;
  }

  #ensureChannel(): BroadcastChannel | undefined {
    this.#channel ??= openChannel(this.#channelName, (data) => {
      const message = data as Partial<WireMessage> | null;
      if (!message || message.v !== PROTOCOL || message.sender === this.#sender) return;
      if (message.key) for (const listener of this.#onKey) listener();
      if (message.change) this.#listeners.deliver({ ...message.change, remote: true });
    });
    return this.#channel;
  }
}
