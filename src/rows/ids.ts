/**
 * Validation of the ids that become IndexedDB keys, and reading them out of a
 * `RunnableConfig`. Ids are strings; the prototype-pollution names are refused
 * here, as MemorySaver refuses them, so every saver of an app accepts the same ids.
 */
import type { RunnableConfig } from "@langchain/core/runnables";

/** Names that reach `Object.prototype` when used as a property key. */
const RESERVED_IDS = new Set(["__proto__", "constructor", "prototype"]);

/** Options of {@link assertId}. */
interface AssertIdOptions {
  /** Accept `""` (the root checkpoint namespace). */
  allowEmpty?: boolean;
}

/** A readable name for what a caller passed instead of a string. */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}

/**
 * Throws a clear error unless `value` is a usable id: a string, non-empty
 * (unless allowed), not one of `__proto__`, `constructor`, `prototype`, and
 * for `checkpoint_ns` not starting with `"\u0000"` (the saver's own rows).
 *
 * @param field The config field the id came from, for the message.
 */
export function assertId(field: string, value: unknown, options: AssertIdOptions = {}): asserts value is string {
  if (typeof value !== "string") {
    throw new Error(`Invalid "${field}": expected a string id, got ${describe(value)}.`);
  }
  if (value === "" && !options.allowEmpty) {
    throw new Error(`Invalid "${field}": the empty string is not a valid id.`);
  }
  // The saver keeps its own rows (deleted-thread tombstones) in namespaces
  // starting with NUL; a caller's checkpoint there would read or overwrite them.
  if (field === "checkpoint_ns" && value.startsWith("\u0000")) {
    throw new Error(
      `Invalid "checkpoint_ns": namespaces starting with "\\u0000" are reserved for the saver's own rows; choose another namespace.`,
    );
  }
  if (RESERVED_IDS.has(value)) {
    throw new Error(
      `Invalid "${field}": "${value}" is reserved (it would reach Object.prototype in other savers); choose another id.`,
    );
  }
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `value` would not round-trip as an id through every place a thread
 * goes (the sync server's PostgreSQL text, JSON exports), or undefined:
 * PostgreSQL text holds no U+0000 (a push holding one fails), and a lone
 * surrogate becomes U+FFFD there, so two ids become one.
 */
export function idDefect(value: string): string | undefined {
  if (value.includes("\u0000")) return "must not contain U+0000";
  if (LONE_SURROGATE.test(value)) return "must be well-formed UTF-16: it holds a lone surrogate";
  return undefined;
}

/**
 * {@link assertId} for an id about to be written (`put`, `putWrites`, a
 * copy's or an import's target): also refuses what {@link idDefect} names,
 * so every id a saver stores round-trips exactly. Reads keep accepting such
 * ids, which databases written before this check may hold.
 */
export function assertStorableId(
  field: string,
  value: unknown,
  options: AssertIdOptions = {},
): asserts value is string {
  assertId(field, value, options);
  const defect = idDefect(value);
  if (defect !== undefined) {
    throw new Error(
      `Invalid "${field}" ${JSON.stringify(value)}: an id ${defect}, or it would not come back the same from the sync server or an export.`,
    );
  }
}

/** The message LangGraph's own savers give for a config without `thread_id`. */
export function missingThreadIdMessage(action: string): string {
  return `Failed to ${action}. The passed RunnableConfig is missing a required "thread_id" field in its "configurable" property. When using a checkpointer, you must pass a "thread_id" so the checkpointer knows which conversation thread to persist state for. Example: graph.stream(input, { configurable: { thread_id: "my-thread-id" } })`;
}

/** The ids a config points at: thread, namespace and (maybe) checkpoint. */
export interface ConfigIds {
  threadId: string;
  checkpointNs: string;
  /** Undefined when the config means "the latest". */
  checkpointId: string | undefined;
}

/**
 * Reads and validates the ids of a config that must name a thread.
 *
 * @param action What the caller does, for the missing-thread message.
 */
export function configIds(config: RunnableConfig, action: string): ConfigIds {
  const configurable = config.configurable ?? {};
  const threadId: unknown = configurable.thread_id;
  if (threadId === undefined || threadId === null) throw new Error(missingThreadIdMessage(action));
  assertId("thread_id", threadId);
  const checkpointNs: unknown = configurable.checkpoint_ns ?? "";
  assertId("checkpoint_ns", checkpointNs, { allowEmpty: true });
  // `thread_ts` is the pre-1.0 name of checkpoint_id, still honoured by getCheckpointId.
  const rawId: unknown = configurable.checkpoint_id || configurable.thread_ts || undefined;
  if (rawId !== undefined) assertId("checkpoint_id", rawId);
  return { threadId, checkpointNs, checkpointId: rawId };
}
