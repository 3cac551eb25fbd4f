/**
 * A graph's `StateSnapshot` in the Agent Server's JSON shape (`ThreadState`
 * of the SDK): snake_case keys, the checkpoint as `{ thread_id,
 * checkpoint_id, checkpoint_ns, checkpoint_map }`, task errors as messages.
 */
import { errorData } from "./stream.js";

/** A `RunnableConfig` as far as a snapshot's config is read. */
interface SnapshotConfig {
  configurable?: Record<string, unknown>;
}

/** The fields of LangGraph's `StateSnapshot` (and of a subgraph task's state) read here. */
export interface Snapshot {
  values: unknown;
  next: readonly string[];
  tasks: readonly {
    id: string;
    name: string;
    error?: unknown;
    interrupts: readonly unknown[];
    path?: readonly unknown[];
    state?: Snapshot | SnapshotConfig;
    result?: unknown;
  }[];
  metadata?: unknown;
  createdAt?: string;
  config?: SnapshotConfig;
  parentConfig?: SnapshotConfig;
}

/** The Agent Server's checkpoint reference. */
export interface CheckpointRef {
  thread_id: string;
  checkpoint_id: string;
  checkpoint_ns: string;
  checkpoint_map: Record<string, unknown> | null;
}

/** The Agent Server's `ThreadState`. */
export interface ThreadStateJson {
  values: unknown;
  next: readonly string[];
  tasks: {
    id: string;
    name: string;
    error: string | null;
    interrupts: readonly unknown[];
    path: readonly unknown[] | undefined;
    checkpoint: Record<string, unknown> | null;
    state: ThreadStateJson | null;
    result: unknown;
  }[];
  metadata: unknown;
  created_at: string | null;
  checkpoint: CheckpointRef | null;
  parent_checkpoint: CheckpointRef | null;
}

/** `snapshot` in the Agent Server's JSON shape. */
export function toThreadState(snapshot: Snapshot): ThreadStateJson {
  return {
    values: snapshot.values,
    next: snapshot.next,
    tasks: snapshot.tasks.map((task) => ({
      id: task.id,
      name: task.name,
      error: task.error != null ? errorData(task.error).message : null,
      interrupts: task.interrupts,
      path: task.path,
      checkpoint: task.state && !isSnapshot(task.state) ? (task.state.configurable ?? null) : null,
      state: task.state && isSnapshot(task.state) ? toThreadState(task.state) : null,
      result: task.result ?? null,
    })),
    metadata: snapshot.metadata,
    created_at: snapshot.createdAt ? new Date(snapshot.createdAt).toISOString() : null,
    checkpoint: toCheckpointRef(snapshot.config),
    parent_checkpoint: toCheckpointRef(snapshot.parentConfig),
  };
}

function isSnapshot(state: Snapshot | SnapshotConfig): state is Snapshot {
  return "values" in state && "next" in state;
}

/** The checkpoint a config names, or null when it names none. */
export function toCheckpointRef(config: SnapshotConfig | undefined): CheckpointRef | null {
  const configurable = config?.configurable;
  const threadId = configurable?.thread_id;
  const checkpointId = configurable?.checkpoint_id;
  if (typeof threadId !== "string" || threadId === "" || typeof checkpointId !== "string") return null;
  const ns = configurable?.checkpoint_ns;
  const map = configurable?.checkpoint_map;
  return {
    thread_id: threadId,
    checkpoint_id: checkpointId,
    checkpoint_ns: typeof ns === "string" ? ns : "",
    checkpoint_map: typeof map === "object" && map !== null ? (map as Record<string, unknown>) : null,
  };
}
