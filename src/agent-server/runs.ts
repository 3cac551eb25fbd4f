/**
 * The runs of one server: each goes through `runOnThread`, so a thread runs
 * one graph at a time across every tab and worker of the origin and a second
 * run follows its multitask strategy (reject, enqueue, interrupt, rollback).
 * A run's events are kept in order with their ids, so a client that joins
 * late, or reconnects with `Last-Event-ID`, reads them all from where it was.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { runOnThread, type MultitaskStrategy, type RunSaver } from "../runs/coordinator.js";
import { RunInterruptedError } from "../runs/errors.js";
import type { RunLockManager } from "../runs/locks.js";
import { errorData, streamRunEvents, toJsonText, type EventStreamingGraph, type StreamMode } from "./stream.js";

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

/** What starts a run. */
export interface RunSpec {
  threadId: string;
  assistantId: string;
  graph: EventStreamingGraph;
  /** The input, a LangGraph `Command`, or null to continue from the checkpoint. */
  input: unknown;
  config: RunnableConfig;
  modes: readonly StreamMode[];
  subgraphs: boolean;
  multitask: MultitaskStrategy;
  metadata: Record<string, unknown>;
}

/** A run of this server, live or finished. */
export interface LiveRun {
  readonly record: RunRecord;
  readonly events: SentEvent[];
  /** Resolves once the run has ended, whatever the outcome. */
  readonly done: Promise<void>;
  /** What the run threw, if it failed. */
  readonly error: unknown;
}

interface RunState extends LiveRun {
  record: RunRecord;
  done: Promise<void>;
  error: unknown;
  finished: boolean;
  controller: AbortController;
  wake: Set<() => void>;
}

/** What the registry reports to the server as runs start and end. */
export interface RunHooks {
  /** The run holds its thread and starts. */
  started(run: RunRecord): Promise<void>;
  /** The run has ended (its checkpoints are committed). */
  ended(run: RunRecord, error: unknown): Promise<void>;
}

/** Runs of one server, by thread. */
export class RunRegistry {
  readonly #saver: RunSaver;
  readonly #locks: RunLockManager | undefined;
  readonly #hooks: RunHooks;
  readonly #runs = new Map<string, RunState>();

  constructor(saver: RunSaver, hooks: RunHooks, locks?: RunLockManager) {
    this.#saver = saver;
    this.#hooks = hooks;
    this.#locks = locks;
  }

  /** Starts a run; it waits for its thread as its strategy says. */
  start(spec: RunSpec): LiveRun {
    const now = new Date().toISOString();
    const runId = crypto.randomUUID();
    const state: RunState = {
      record: {
        run_id: runId,
        thread_id: spec.threadId,
        assistant_id: spec.assistantId,
        created_at: now,
        updated_at: now,
        status: "pending",
        metadata: spec.metadata,
        multitask_strategy: spec.multitask,
      },
      events: [],
      done: Promise.resolve(),
      error: undefined,
      finished: false,
      controller: new AbortController(),
      wake: new Set(),
    };
    this.#runs.set(runId, state);
    this.#push(state, "metadata", { run_id: runId, attempt: 1 });
    state.done = this.#execute(state, spec);
    return state;
  }

  /** The run `runId` of `threadId`, if this server started it. */
  get(threadId: string, runId: string): LiveRun | undefined {
    const run = this.#runs.get(runId);
    return run?.record.thread_id === threadId ? run : undefined;
  }

  /** The runs of `threadId` this server started, newest first. */
  list(threadId: string): RunRecord[] {
    return [...this.#runs.values()]
      .filter((run) => run.record.thread_id === threadId)
      .map((run) => run.record)
      .reverse();
  }

  /** The run's events after `afterId` (all with -1), then each as it comes, until the run ends. */
  async *follow(run: LiveRun, afterId = -1): AsyncGenerator<SentEvent> {
    const state = run as RunState;
    let next = afterId + 1;
    for (;;) {
      while (next < state.events.length) yield state.events[next++]!;
      if (state.finished) return;
      await new Promise<void>((resolve) => state.wake.add(resolve));
    }
  }

  /**
   * Stops the run (or takes it out of the queue). `"rollback"` also deletes
   * the checkpoints it wrote. Resolves once it has ended.
   */
  async cancel(run: LiveRun, action: "interrupt" | "rollback"): Promise<void> {
    const state = run as RunState;
    state.controller.abort(new Error(`Run ${state.record.run_id} was cancelled.`));
    await state.done;
    if (action === "rollback") {
      await this.#saver.deleteForRuns([state.record.run_id], { threadId: state.record.thread_id });
    }
  }

  /** Cancels every run that has not ended and waits for them. */
  async close(): Promise<void> {
    const open = [...this.#runs.values()].filter((run) => !run.finished);
    for (const run of open) run.controller.abort(new Error("The agent server was closed."));
    await Promise.all(open.map((run) => run.done));
  }

  async #execute(state: RunState, spec: RunSpec): Promise<void> {
    const runner = {
      invoke: async (input: unknown, config: RunnableConfig) => {
        this.#setStatus(state, "running");
        await this.#hooks.started(state.record);
        const options = { modes: spec.modes, subgraphs: spec.subgraphs, runId: state.record.run_id };
        for await (const { event, data } of streamRunEvents(spec.graph, input, { ...config }, options)) {
          this.#push(state, event, data);
        }
      },
    };
    const config = { ...spec.config, metadata: { ...spec.config.metadata, run_id: state.record.run_id } };
    try {
      await runOnThread(runner, spec.input, config, {
        multitask: spec.multitask,
        saver: this.#saver,
        signal: state.controller.signal,
        locks: this.#locks,
      });
      this.#setStatus(state, "success");
    } catch (error) {
      const stopped = error instanceof RunInterruptedError || state.controller.signal.aborted;
      this.#setStatus(state, stopped ? "interrupted" : "error");
      if (!stopped) {
        state.error = error;
        this.#push(state, "error", errorData(error));
      }
    }
    try {
      await this.#hooks.ended(state.record, state.error);
    } finally {
      state.finished = true;
      this.#wake(state);
    }
  }

  #setStatus(state: RunState, status: RunStatus): void {
    state.record = { ...state.record, status, updated_at: new Date().toISOString() };
  }

  #push(state: RunState, event: string, data: unknown): void {
    state.events.push({ id: state.events.length, event, data: toJsonText(data) });
    this.#wake(state);
  }

  #wake(state: RunState): void {
    const waiting = [...state.wake];
    state.wake.clear();
    for (const resolve of waiting) resolve();
  }
}
