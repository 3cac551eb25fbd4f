/**
 * Checkpoints with explicit channel values and versions, for the tests that
 * edit row format 2's rows (values held inline) by hand: which row holds
 * which value depends on the versions each put introduces.
 */
import { emptyCheckpoint, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";

/** Metadata of a loop step: what every put of these tests stores. */
export const stepMetadata = { source: "loop", step: 0, parents: {} } as CheckpointMetadata;

/** Checkpoint `id` holding `values` at `versions`. */
export function checkpointOf(
  id: string,
  values: Record<string, unknown>,
  versions: Record<string, number>,
): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

/** The config of a thread's root namespace, at checkpoint `id` (or its latest). */
export function threadAt(thread: string, id?: string): RunnableConfig {
  return { configurable: { thread_id: thread, checkpoint_ns: "", ...(id ? { checkpoint_id: id } : {}) } };
}
