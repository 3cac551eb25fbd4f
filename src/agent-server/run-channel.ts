/**
 * Messages between the local agent servers of one origin (tabs, workers) on
 * a BroadcastChannel per database (`…:<dbName>:agent-runs`): a server
 * following or cancelling a run that another server runs asks that server,
 * which answers with the run's events so far, then sends each new one as it
 * comes, and a last message once the run has ended; and each tells the
 * others when a thread has a new run or is deleted. Messages carry a
 * protocol version, so builds that speak another version ignore each other.
 */
import { crossTabName, VersionedChannel } from "../core/channel.js";
import type { SentEvent } from "./records.js";

/** Version of the messages on the channel. */
const PROTOCOL = 1;

/** What agent servers tell each other about runs. */
export type AgentRunMessage =
  /** Endpoint `from` follows `runId` from the event after `after`: its runner answers with "events" to `from`. */
  | { type: "replay"; runId: string; after: number; from: string }
  /**
   * Events of `runId`, in order: the answer to a "replay" of endpoint `to`
   * (every event after the one asked for), or, without `to`, the next events
   * for every follower. `finished` once the run has ended.
   */
  | { type: "events"; runId: string; to?: string; events: SentEvent[]; finished: boolean }
  /**
   * Someone asks the runner of `runId` to cancel it, a run of `threadId` as
   * the asker read its record: a runner whose run is another thread's (the
   * record edited on disk) leaves it going. Builds before it send no thread.
   */
  | { type: "cancel"; runId: string; action: "interrupt" | "rollback"; threadId?: string }
  /**
   * A run of `threadId` is in the run log now, or the thread was deleted: a
   * thread's stream waiting for its next run looks again. It names no run,
   * so builds before it (which take only messages with a `runId`) drop it.
   */
  | { type: "changed"; threadId: string };

/** One endpoint on a database's agent-run channel, with the id answers are addressed to. @internal */
export class AgentRunChannel extends VersionedChannel<AgentRunMessage> {
  /** This endpoint's id, which answers are addressed to. */
  readonly id = crypto.randomUUID();

  constructor(dbName: string) {
    super(
      crossTabName({ kind: "agent-runs", dbName }),
      PROTOCOL,
      (message) =>
        typeof message.runId === "string" || (message.type === "changed" && typeof message.threadId === "string"),
    );
  }
}
