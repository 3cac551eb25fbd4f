/**
 * Messages between runs on different tabs and workers of one origin: a run
 * asking the holder of a thread's lock to stop ("interrupt" or "rollback"),
 * the holder's answer, and "started"/"ended" notices for watchers. They travel
 * on a BroadcastChannel per database whose name carries a protocol version
 * (`langgraph-checkpoint-indexeddb:v1:<dbName>:runs`), so builds that speak
 * another version ignore each other instead of misreading.
 */

import { crossTabName, openChannel, postQuietly } from "../core/channel.js";
import { Listeners } from "../core/listeners.js";

/** Version of the messages on the channel. */
const PROTOCOL = 1;

/** How a second run asks the running one to stop. */
export type StopStrategy = "interrupt" | "rollback";

/** What runs tell each other. */
export type RunMessage =
  /** `from` (a run id) asks whoever runs `threadId` to stop. */
  | { type: "stop"; threadId: string; from: string; strategy: StopStrategy }
  /** The run `runId` will stop as `to` asked. */
  | { type: "stopping"; threadId: string; runId: string; to: string }
  /** `runId` took or released the lock of `threadId`. */
  | { type: "started" | "ended"; threadId: string; runId: string };

type Wire = RunMessage & { v: typeof PROTOCOL };

/** The channel name of a database's run messages. */
export function runChannelName(dbName: string): string {
  return crossTabName({ kind: "runs", dbName });
}

/**
 * One endpoint on a database's run channel. Each run and each watcher opens
 * its own: a BroadcastChannel delivers to every other endpoint of the same
 * name, in this context too, but never back to the sender.
 * @internal
 */
export class RunChannel {
  readonly #channel: BroadcastChannel | undefined;
  readonly #listeners = new Listeners<RunMessage>();

  constructor(dbName: string) {
    this.#channel = openChannel(runChannelName(dbName), (data) => {
      const message = data as Partial<Wire> | null;
      if (!message || message.v !== PROTOCOL || typeof message.threadId !== "string") return;
      this.#listeners.deliver(message as RunMessage);
    });
  }

  /** Adds a listener; returns the function that removes it. */
  listen(listener: (message: RunMessage) => void): () => void {
    return this.#listeners.add(listener);
  }

  /** Sends to every other endpoint on this database's channel (dropped once it is closed: nobody left to tell). */
  post(message: RunMessage): void {
    postQuietly(this.#channel, { ...message, v: PROTOCOL } satisfies Wire);
  }

  close(): void {
    this.#listeners.clear();
    this.#channel?.close();
  }
}
