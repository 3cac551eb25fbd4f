/**
 * The `debug`, `checkpoints` and `tasks` events in the Agent Server's shapes
 * (`@langchain/langgraph-api`'s `streamState`, the SDK's
 * `CheckpointsStreamEvent`): LangGraph yields each checkpoint with the run's
 * own config, which holds its callback handlers and LangGraph's internal
 * `__pregel_*` keys (the abort signal): sent as they were, a client read
 * those, and no `checkpoint` reference where the Agent Server gives one.
 */
import { toCheckpointRef } from "./state.js";

type Json = Record<string, unknown>;

/** `data` of a run event named `event` (a subgraph's `<mode>|<namespace>` too), as the Agent Server sends it. */
export function shapeEvent(event: string, data: unknown): unknown {
  if (!isObject(data)) return data;
  const mode = event.split("|")[0];
  if (mode === "tasks") return shapeTask(data);
  if (mode === "checkpoints") {
    // A chunk of another shape (a later LangGraph's checkpoint envelope) goes as it comes.
    if (!("config" in data)) return data;
    const { values, next, metadata } = data;
    return { values, next, config: publicConfig(data.config), metadata, tasks: shapeTasks(data.tasks) };
  }
  if (mode !== "debug" || !isObject(data.payload)) return data;
  if (data.type === "task_result") return { ...data, payload: shapeTask(data.payload) };
  if (data.type !== "checkpoint") return data;
  const { parentConfig, ...payload } = data.payload;
  return {
    ...data,
    payload: {
      ...payload,
      config: publicConfig(payload.config),
      tasks: shapeTasks(payload.tasks),
      checkpoint: toCheckpointRef(configOf(payload.config)),
      parent_checkpoint: toCheckpointRef(configOf(parentConfig)),
      parent_config: publicConfig(parentConfig),
    },
  };
}

/** A config without its callbacks and without the configurable keys LangGraph keeps for itself (`__…`). */
function publicConfig(config: unknown): unknown {
  if (!isObject(config) || !isObject(config.configurable)) return config;
  const { callbacks: _callbacks, ...rest } = config;
  const configurable = Object.fromEntries(Object.entries(config.configurable).filter(([key]) => !key.startsWith("__")));
  return { ...rest, configurable };
}

function shapeTasks(tasks: unknown): unknown {
  return Array.isArray(tasks) ? tasks.map((task) => (isObject(task) ? shapeTask(task) : task)) : tasks;
}

/** A task whose `state` is a subgraph's config: its `checkpoint` reference in its place, as the Agent Server sends it. */
function shapeTask(task: Json): Json {
  const configurable = isObject(task.state) ? task.state.configurable : undefined;
  if (!isObject(configurable) || typeof configurable.thread_id !== "string" || configurable.thread_id === "") {
    return task;
  }
  const { state: _state, ...rest } = task;
  const { thread_id, checkpoint_id, checkpoint_ns, checkpoint_map } = configurable;
  return {
    ...rest,
    checkpoint: {
      thread_id,
      checkpoint_id: typeof checkpoint_id === "string" ? checkpoint_id : null,
      checkpoint_ns: typeof checkpoint_ns === "string" ? checkpoint_ns : "",
      checkpoint_map: isObject(checkpoint_map) ? checkpoint_map : null,
    },
  };
}

function configOf(config: unknown): { configurable?: Json } | undefined {
  return isObject(config) ? (config as { configurable?: Json }) : undefined;
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
