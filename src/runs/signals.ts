/**
 * Messages between runs on different tabs and workers of one origin: a run
 * asking the holder of a thread's lock to stop ("interrupt" or "rollback"),
 * the holder's answer, and "started"/"ended" notices for watchers. They travel
 * on a BroadcastChannel per database whose name carries a protocol version
 * (`langgraph-checkpoint-indexeddb:v1:<dbName>:runs`), so builds that speak
 * another version ignore each other instead of misreading.
 */

import { crossTabName, VersionedChannel } from "../core/channel.js";

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
export class RunChannel extends VersionedChannel<RunMessage> {
  constructor(dbName: string) {
    super(runChannelName(dbName), PROTOCOL, (message) => typeof message.threadId === "string");
  }
}
