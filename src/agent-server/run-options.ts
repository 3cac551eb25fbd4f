/**
 * A run request's options beyond its input: its `config`, checked key by
 * key before LangGraph sees it (JSON cannot carry a signal or callbacks, and
 * a wrong `maxConcurrency` spins LangGraph's loop for good), and the Agent
 * Server options served or refused in the page.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { MAX_TIMEOUT_MS } from "../runs/coordinator.js";
import { STRICT_RESUME_KEY } from "../runs/holder.js";
import { isPlainObject, isStringList } from "../core/guards.js";
import { BadRequest, checkOneOf, optionalBoolean, optionalObject, optionalString } from "./input.js";

/** Each config key served, in the Agent Server's name and LangGraph's where they differ: its check and its name for LangGraph. */
const CONFIG_KEYS: Readonly<Record<string, { what: string; ok: (value: unknown) => boolean; as: string }>> = {
  configurable: { what: "an object", ok: isPlainObject, as: "configurable" },
  metadata: { what: "an object", ok: isPlainObject, as: "metadata" },
  tags: { what: "a list of strings", ok: isStringList, as: "tags" },
  recursion_limit: { what: "a positive integer", ok: isCount(1), as: "recursionLimit" },
  recursionLimit: { what: "a positive integer", ok: isCount(1), as: "recursionLimit" },
  max_concurrency: { what: "a positive integer", ok: isCount(1), as: "maxConcurrency" },
  maxConcurrency: { what: "a positive integer", ok: isCount(1), as: "maxConcurrency" },
  run_name: { what: "a string", ok: (value) => typeof value === "string", as: "runName" },
  runName: { what: "a string", ok: (value) => typeof value === "string", as: "runName" },
  timeout: {
    what: `a positive number of milliseconds up to ${MAX_TIMEOUT_MS}`,
    ok: (value) => typeof value === "number" && value > 0 && value <= MAX_TIMEOUT_MS,
    as: "timeout",
  },
};

/**
 * The run's LangGraph config from the request's `config`: each key served
 * checked for its type and given its LangGraph name; any other key refused
 * (a `signal` or `callbacks` cannot come through JSON: a run is stopped with
 * `runs.cancel`).
 * @throws {BadRequest} a key not served, or one of the wrong type.
 */
export function runConfigOf(json: Record<string, unknown>): RunnableConfig {
  const config = optionalObject(json, "config") ?? {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined || value === null) continue;
    const served = Object.hasOwn(CONFIG_KEYS, key) ? CONFIG_KEYS[key] : undefined;
    if (!served) {
      throw new BadRequest(
        `config.${key} is not served by the local agent server: a run's config takes ${Object.keys(CONFIG_KEYS).join(", ")} (a signal or callbacks cannot come through JSON; stop a run with runs.cancel).`,
      );
    }
    if (!served.ok(value)) throw new BadRequest(`config.${key} must be ${served.what}; got ${JSON.stringify(value)}.`);
    if (key === "configurable") refuseLangGraphKeys(value as Record<string, unknown>);
    out[served.as] = value;
  }
  return out as RunnableConfig;
}

/**
 * Refuses LangGraph's own configurable keys (`__pregel_*`: its checkpointer,
 * its resuming flag...), which JSON can name but only LangGraph sets: passed
 * on, a run dropped its input without a word or failed on a TypeError.
 * @throws {BadRequest} naming the key.
 */
function refuseLangGraphKeys(configurable: Record<string, unknown>): void {
  const key = Object.keys(configurable).find((name) => name.startsWith("__pregel_"));
  if (key !== undefined) {
    throw new BadRequest(`config.configurable.${key} is LangGraph's own (it sets the __pregel_ keys of a run itself).`);
  }
}

function isCount(least: number): (value: unknown) => boolean {
  return (value) => Number.isInteger(value) && (value as number) >= least;
}

/** LangGraph's durabilities: when a run's checkpoints are written. */
const DURABILITIES = ["sync", "async", "exit"] as const;

/**
 * The run's `durability` (LangGraph's option of that name; the deprecated
 * `checkpoint_during` false is "exit", true "async"), undefined for
 * LangGraph's default. Refuses what the page cannot do: a `webhook` (the
 * Agent Server calls it from the server, with retries, whoever is still
 * connected; a page would call it from the user's browser, under CORS, and
 * not at all once the tab closes) and `feedback_keys` (LangSmith's signed
 * feedback URLs need LangSmith). `on_completion` only applies to thread-less
 * runs, as at the Agent Server: checked, without effect on a thread's run.
 * @throws {BadRequest} a field refused or of the wrong type.
 */
export function durabilityOf(json: Record<string, unknown>): (typeof DURABILITIES)[number] | undefined {
  if (optionalString(json, "webhook") !== undefined) {
    throw new BadRequest(
      "webhook is not served by the local agent server: the page cannot call it for the run the way a server does (whatever tab is open, past CORS, with retries); call it from onFinish or after runs.join.",
    );
  }
  const feedbackKeys = json.feedback_keys;
  if (
    feedbackKeys !== undefined &&
    feedbackKeys !== null &&
    !(Array.isArray(feedbackKeys) && feedbackKeys.length === 0)
  ) {
    throw new BadRequest(
      `feedback_keys are not served by the local agent server (LangSmith signs their URLs); got ${JSON.stringify(feedbackKeys)}.`,
    );
  }
  onCompletionOf(json);
  optionalBoolean(json, "stream_resumable");
  const durability = optionalString(json, "durability");
  const during = optionalBoolean(json, "checkpoint_during");
  if (durability !== undefined && during !== undefined) {
    throw new BadRequest("durability and checkpoint_during cannot both be given (checkpoint_during is its old name).");
  }
  if (durability !== undefined) return checkOneOf(durability, DURABILITIES, "durability");
  return during === undefined ? undefined : during ? "async" : "exit";
}

/**
 * The configurable a run's `strict_resume` adds: LangGraph's strict resume
 * key when it is true (the SDK's `strictResume`, which `useStream` passes
 * on), nothing otherwise. LangGraph then fails a run whose resume names an
 * interrupt not waiting, is an empty map, or is one answer while several
 * interrupts wait, with `UnknownInterruptError`, before writing anything.
 * Once checked and dropped: one answer while two questions waited answered both.
 * @throws {BadRequest} a strict_resume that is not a boolean.
 */
export function strictResumeOf(json: Record<string, unknown>): Record<string, true> {
  return optionalBoolean(json, "strict_resume") === true ? { [STRICT_RESUME_KEY]: true } : {};
}

/**
 * The SDK's names for `on_completion` (its OnCompletionBehavior types the
 * field "complete" | "continue" and sends it as given), by the Agent
 * Server's: the run completes and its thread goes, or the thread stays to be
 * continued.
 */
const SDK_ON_COMPLETION = { complete: "delete", continue: "keep" } as const;

/**
 * What becomes of a thread-less run's thread once the run has ended
 * (`on_completion`): "delete" (the default, as at the Agent Server) or
 * "keep"; the SDK's typed "complete" and "continue" are taken for them.
 * @throws {BadRequest} anything else.
 */
export function onCompletionOf(json: Record<string, unknown>): "delete" | "keep" {
  const asked = optionalString(json, "on_completion") ?? "delete";
  const named = Object.hasOwn(SDK_ON_COMPLETION, asked) ? SDK_ON_COMPLETION[asked as "complete"] : asked;
  return checkOneOf(named, ["delete", "keep"], `on_completion (or the SDK's "complete", "continue")`);
}

/**
 * The run's `interrupt_before` or `interrupt_after` (`key`): "*" or a list of
 * node names, undefined if absent or null.
 * @throws {BadRequest} anything else (LangGraph failed the run on it).
 */
export function interruptNodesOf(json: Record<string, unknown>, key: string): "*" | string[] | undefined {
  const value = json[key];
  if (value === undefined || value === null) return undefined;
  if (value === "*" || isStringList(value)) return value as "*" | string[];
  throw new BadRequest(`${key} must be "*" or a list of node names; got ${JSON.stringify(value)}.`);
}
