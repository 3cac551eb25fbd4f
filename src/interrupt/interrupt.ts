/**
 * `interruptWith(config, value, options?)`: LangGraph's `interrupt()` for
 * runtimes without `AsyncLocalStorage` (browsers, workers). LangGraph's own
 * `interrupt()` finds its run through `AsyncLocalStorage`; this one is handed
 * the config every node and tool receives, and does the same work with it:
 * count the interrupt in the task's scratchpad, return the resume value at
 * that index (or the pending `Command({ resume })` value), else throw
 * `GraphInterrupt` with the id LangGraph matches resume maps against.
 */
import * as langgraph from "@langchain/langgraph/web";
import type { Interrupt, InterruptOptions } from "@langchain/langgraph/web";
import type { RunnableConfig } from "@langchain/core/runnables";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { interopParse, isInteropZodSchema } from "@langchain/core/utils/types";
import { IndexedDBCheckpointError, nameErrors } from "../core/errors.js";
import { xxh3 } from "./xxh3.js";

/** The LangGraph versions whose run internals `interruptWith` reads (tested: 1.5.0 and 1.7.3). */
export const SUPPORTED_LANGGRAPH = "@langchain/langgraph >=1.5.0 <2";

/**
 * `interruptWith` was given a config whose LangGraph run internals (the task's
 * scratchpad and send function) are missing or not the shape it knows: a
 * LangGraph outside {@link SUPPORTED_LANGGRAPH}, or a config that did not come
 * from a running task. Thrown before anything is resumed or written, so a
 * pause is never answered with the wrong value.
 */
export class UnsupportedLangGraphError extends IndexedDBCheckpointError {}
nameErrors({ UnsupportedLangGraphError });

/** The keys LangGraph puts in a running task's `config.configurable` (its CONFIG_KEY_* constants). */
const SCRATCHPAD = "__pregel_scratchpad";
const SEND = "__pregel_send";
const CHECKPOINTER = "__pregel_checkpointer";
const RESUME = "__resume__";

/** The part of LangGraph's per-task scratchpad an interrupt reads and advances. */
interface Scratchpad {
  interruptCounter: number;
  resume: unknown[];
  nullResume?: unknown;
  consumeNullResume: () => unknown;
}

type Send = (writes: [string, unknown][]) => void;

/**
 * What `interruptWith` takes from the LangGraph module that runs the graph.
 * `UnknownInterruptError` marks the releases (1.7 on) whose interrupt ids count
 * the interrupts a task has already had answered. @internal
 */
export interface LangGraphInterruptApi {
  GraphInterrupt: new (interrupts?: Interrupt[]) => Error;
  GraphValueError: new (message?: string, fields?: { lc_error_code?: "MISSING_CHECKPOINTER" }) => Error;
  UnknownInterruptError?: unknown;
  _markInvalidResume?: (error: unknown) => unknown;
}

/**
 * Pauses the graph to ask a human, as LangGraph's `interrupt(value, options)`
 * does, with the node's or tool's `config` (its second argument) in place of
 * `AsyncLocalStorage`. The first run throws `GraphInterrupt`: the run stops
 * with `value` in `state.tasks[].interrupts` and `result.__interrupt__`.
 * Resume with LangGraph's `Command({ resume })` (or `{ resume: { [id]: value } }`
 * for one of several pending interrupts); the node runs again from its start,
 * and this call returns the resume value. Several calls in one node are
 * answered in order. Do not catch the thrown error, or rethrow it.
 *
 * @param config The `RunnableConfig` LangGraph passed to the node or tool.
 * @param value What to ask: any serializable value, shown to the human.
 * @param options `responseSchema`: a Zod schema (which also parses the answer)
 *   or JSON Schema, exposed as the interrupt's `response_schema`.
 * @returns The resume value, parsed by a Zod `responseSchema`.
 * @throws GraphInterrupt When no answer is there yet (LangGraph catches it).
 * @throws UnsupportedLangGraphError When `config` lacks the run internals of {@link SUPPORTED_LANGGRAPH}.
 *
 * @example
 * ```ts
 * const approve = async (state: typeof State.State, config: LangGraphRunnableConfig) => {
 *   const answer = interruptWith<{ question: string }, "yes" | "no">(config, { question: "Save this?" });
 *   return { approved: answer === "yes" };
 * };
 * await graph.invoke(new Command({ resume: "yes" }), { configurable: { thread_id } });
 * ```
 */
export function interruptWith<I = unknown, R = unknown>(
  config: RunnableConfig,
  value: I,
  options?: InterruptOptions,
): R {
  return interruptIn<I, R>(langgraph, config, value, options);
}

/**
 * {@link interruptWith} against a given LangGraph module: the public function
 * binds the installed one; tests pass another release. @internal
 */
export function interruptIn<I, R>(
  api: LangGraphInterruptApi,
  config: RunnableConfig,
  value: I,
  options?: InterruptOptions,
): R {
  const conf = runInternals(config);
  if (!conf[CHECKPOINTER]) {
    throw new api.GraphValueError("No checkpointer set", { lc_error_code: "MISSING_CHECKPOINTER" });
  }
  const { scratchpad, send, namespace } = readTask(conf);
  const schema = options?.responseSchema;
  const parseResume = (resume: unknown): R => {
    if (schema === undefined || !isInteropZodSchema(schema)) return resume as R;
    try {
      return interopParse(schema, resume) as R;
    } catch (error) {
      api._markInvalidResume?.(error);
      throw error;
    }
  };
  scratchpad.interruptCounter += 1;
  const index = scratchpad.interruptCounter;
  if (scratchpad.resume.length > 0 && index < scratchpad.resume.length) {
    const parsed = parseResume(scratchpad.resume[index]);
    send([[RESUME, scratchpad.resume.slice(0, index + 1)]]);
    return parsed;
  }
  if (scratchpad.nullResume !== undefined) {
    if (scratchpad.resume.length !== index) {
      throw new Error(`Resume length mismatch: ${scratchpad.resume.length} !== ${index}`);
    }
    const answer = scratchpad.consumeNullResume();
    const parsed = parseResume(answer);
    scratchpad.resume.push(answer);
    send([[RESUME, scratchpad.resume]]);
    return parsed;
  }
  const pending: Interrupt<I> = { id: interruptId(api, namespace, scratchpad.resume.length), value };
  if (schema !== undefined) pending.response_schema = toJsonSchema(schema);
  throw new api.GraphInterrupt([pending]);
}

/**
 * The id LangGraph gives a task's interrupt and looks up in a resume map:
 * from 1.7 on, the namespace hash for the first and the hash of
 * `namespace|answered` after that; before, the namespace hash for all.
 */
function interruptId(api: LangGraphInterruptApi, namespace: string | undefined, answered: number): string | undefined {
  if (namespace === undefined) return undefined;
  const countsAnswers = api.UnknownInterruptError !== undefined;
  return xxh3(countsAnswers && answered > 0 ? `${namespace}|${answered}` : namespace);
}

/** `config.configurable` of a running task, or an error saying where the config should come from. */
function runInternals(config: RunnableConfig | undefined): Record<string, unknown> {
  const conf: unknown = config?.configurable;
  const isRun =
    typeof conf === "object" && conf !== null && Object.keys(conf).some((key) => key.startsWith("__pregel_"));
  if (!isRun) {
    throw new Error(
      "Called interruptWith() without a running graph's config. Pass the config LangGraph gives the node or " +
        "tool as its second argument: `async (state, config) => interruptWith(config, question)`.",
    );
  }
  return conf as Record<string, unknown>;
}

/** The scratchpad, send function and namespace of a task, checked for the shape LangGraph gives them. */
function readTask(conf: Record<string, unknown>): {
  scratchpad: Scratchpad;
  send: Send;
  namespace: string | undefined;
} {
  const scratchpad = conf[SCRATCHPAD] as Partial<Scratchpad> | undefined;
  const send = conf[SEND];
  const namespace = conf["checkpoint_ns"];
  const problems: string[] = [];
  if (typeof scratchpad !== "object" || scratchpad === null) problems.push(`no configurable.${SCRATCHPAD}`);
  else {
    if (typeof scratchpad.interruptCounter !== "number") problems.push("the scratchpad has no interruptCounter");
    if (!Array.isArray(scratchpad.resume)) problems.push("the scratchpad has no resume list");
    if (typeof scratchpad.consumeNullResume !== "function") problems.push("the scratchpad has no consumeNullResume");
  }
  if (typeof send !== "function") problems.push(`no configurable.${SEND} function`);
  if (namespace !== undefined && typeof namespace !== "string") problems.push("checkpoint_ns is not a string");
  if (problems.length > 0) {
    throw new UnsupportedLangGraphError(
      `interruptWith() does not recognise this LangGraph's run internals (${problems.join("; ")}), so it cannot ` +
        `tell which answer belongs to which question. It supports ${SUPPORTED_LANGGRAPH}; install one of those, ` +
        `or call LangGraph's own interrupt() where AsyncLocalStorage exists (Node).`,
    );
  }
  return { scratchpad: scratchpad as Scratchpad, send: send as Send, namespace: namespace as string | undefined };
}
