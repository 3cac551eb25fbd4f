/**
 * The JSON records the local agent server keeps and answers with: threads,
 * runs and run events, in the Agent Server's shapes (snake_case, ISO times).
 */
import type { MultitaskStrategy } from "../runs/coordinator.js";

/** What the Agent Server says of a thread: idle, running, paused on an interrupt, or failed. */
export type ThreadStatus = "idle" | "busy" | "interrupted" | "error";

/** JSON metadata of a thread. */
export type ThreadMetadata = Record<string, unknown>;

/** One thread record, as the Agent Server's thread routes return it. */
export interface ThreadRecord {
  thread_id: string;
  created_at: string;
  updated_at: string;
  metadata: ThreadMetadata;
  status: ThreadStatus;
}

/** A run's status, as the Agent Server reports it. */
export type RunStatus = "pending" | "running" | "success" | "error" | "interrupted";

/** A run, as the run routes return it. */
export interface RunRecord {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  created_at: string;
  updated_at: string;
  status: RunStatus;
  metadata: Record<string, unknown>;
  multitask_strategy: MultitaskStrategy;
}

/** One event as written to the SSE stream: `data` is JSON text already. */
export interface SentEvent {
  id: number;
  event: string;
  data: string;
}
