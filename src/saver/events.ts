/**
 * Change notifications: listeners in this page, and other tabs of the same
 * origin over a BroadcastChannel. The channel name carries a protocol version
 * (as Dexie's `x-storagemutated-1`), so tabs running an older build of the
 * package ignore messages they would not understand instead of misreading them.
 */
import { crossTabName, openChannel, postQuietly } from "../core/channel.js";
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
   * Messages for other tabs not posted yet. They go out in a later task, in
   * order, not from the write that made them: a postMessage took about
   * 0.13 ms of a 2 KB put's 2-3 ms in Chromium (a profile of 1,200 puts),
   * and the put resolved only after it. In a later task it runs while the
   * next write waits for its commit. Another tab learns of a change a task
   * later than it would have. The fresh reads do not rely on notices (they
   * rely on the write lease); the delta-walk cache (delta-cache.ts) drops
   * its walks on one, so until it arrives a walk it serves is the database
   * as it was just before the change, as a read begun a moment earlier
   * would see it; a message between tabs takes a task of its own anyway.
   */
  #outbox: WireMessage[] = [];

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
    if (this.#outbox.push(message) === 1) void nextTask().then(() => this.#flush());
  }

  #flush(): void {
    if (this.#outbox.length === 0) return;
    const channel = this.#ensureChannel();
    for (const message of this.#outbox.splice(0)) postQuietly(channel, message);
  }

  /** Closes the channel, once the messages not posted yet are; a later emit or subscribe reopens it. */
  close(): void {
    this.#flush();
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
