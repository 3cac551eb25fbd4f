/**
 * One run of this server as it goes: its record and its events, kept in
 * order with their ids, written to the run log in batches (one transaction
 * per batch, not per token) and sent to the servers of other tabs that
 * follow it. Functions over the state; the registry (runs.ts) decides when.
 */
import type { AgentRunChannel } from "./run-channel.js";
import type { RunLog } from "./run-log.js";
import type { RunRecord, RunStatus, SentEvent } from "./records.js";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { MultitaskStrategy } from "../runs/coordinator.js";
import type { EventStreamingGraph, StreamMode } from "./stream.js";
import { toJsonText } from "./stream.js";

/** How long events wait before they are written to the run log (one transaction per batch, not per token). */
const SAVE_EVERY_MS = 50;

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
  /**
   * Work done once the run has ended and its final record is written, before
   * anyone following it is told it ended (a thread-less run's thread deleted):
   * given that record, or undefined when the run was rolled back (it is deleted).
   * A rejection is reported on the run: an `error` event, then status `error`.
   */
  afterRun?: (record: RunRecord | undefined) => Promise<void>;
}

/** A run's state in the server running it. */
export interface RunState {
  record: RunRecord;
  events: SentEvent[];
  done: Promise<void>;
  finished: boolean;
  controller: AbortController;
  wake: Set<() => void>;
  /** How many events the run log has. */
  saved: number;
  saving: Promise<void>;
  saveTimer: ReturnType<typeof setTimeout> | undefined;
  /** Another server follows it: send its events on the channel. */
  shared: boolean;
  /** A `reject` run that found its thread busy: never recorded, answered 409. */
  refused: boolean;
  /** Its record may be written: a `reject` run's only once it holds its thread. */
  logged: boolean;
  /** Its graph is done (it returned, threw or was stopped): what is left is its ending. */
  settled: boolean;
  /** Its thread was deleted before it started: it ran nothing and leaves no record. */
  orphaned: boolean;
  /** A cancel asked for its rollback: its checkpoints go before it lets its thread go. */
  rollback: boolean;
  /** Its spec's `afterRun` is under way (it may delete the run's own thread): not waited for by that delete. */
  closing: boolean;
}

/** Where a run's events and record go. */
export interface RunOutput {
  log: RunLog;
  channel: AgentRunChannel;
}

/** A run just asked for: pending, with no event yet. */
export function newRunState(spec: RunSpec, runId: string): RunState {
  const now = new Date().toISOString();
  return {
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
    finished: false,
    controller: new AbortController(),
    wake: new Set(),
    saved: 0,
    saving: Promise.resolve(),
    saveTimer: undefined,
    shared: false,
    refused: false,
    logged: spec.multitask !== "reject",
    settled: false,
    orphaned: false,
    rollback: false,
    closing: false,
  };
}

/** The run's events after `afterId`, then each as it comes, until it ends. */
export async function* followRun(state: RunState, afterId: number): AsyncGenerator<SentEvent> {
  let next = afterId + 1;
  for (;;) {
    while (next < state.events.length) yield state.events[next++]!;
    if (state.finished) return;
    await new Promise<void>((resolve) => state.wake.add(resolve));
  }
}

/** Marks the run ended: followers here and in other tabs stop waiting. */
export function finishRun(out: RunOutput, state: RunState): void {
  state.finished = true;
  clearTimeout(state.saveTimer);
  wake(state);
  if (state.shared) out.channel.post({ type: "events", runId: state.record.run_id, events: [], finished: true });
}

/** Sets the run's status and writes its record. */
export function setRunStatus(out: RunOutput, state: RunState, status: RunStatus): void {
  state.record = { ...state.record, status, updated_at: new Date().toISOString() };
  void saveRun(out, state).catch(() => undefined);
}

/** Adds an event: to followers now, to the run log within SAVE_EVERY_MS (once the run may be recorded). */
export function pushEvent(out: RunOutput, state: RunState, event: string, data: unknown): void {
  const sent = { id: state.events.length, event, data: toJsonText(data) };
  state.events.push(sent);
  if (state.shared) out.channel.post({ type: "events", runId: state.record.run_id, events: [sent], finished: false });
  if (state.logged) {
    state.saveTimer ??= setTimeout(() => void saveRun(out, state).catch(() => undefined), SAVE_EVERY_MS);
  }
  wake(state);
}

/** Writes the record and the events not yet written, after any write already under way. */
export function saveRun(out: RunOutput, state: RunState): Promise<void> {
  clearTimeout(state.saveTimer);
  state.saveTimer = undefined;
  state.saving = state.saving
    .catch(() => undefined)
    .then(async () => {
      const events = state.events.slice(state.saved);
      await out.log.save(state.record, events);
      state.saved += events.length;
    });
  return state.saving;
}

function wake(state: RunState): void {
  const waiting = [...state.wake];
  state.wake.clear();
  for (const resolve of waiting) resolve();
}

/**
 * The strategy the run `own` of `spec` asks its thread with, given this server's `runs`. A
 * `rollback` asked while every run of this server on the thread not ended is
 * already stopping on a cancel that keeps its checkpoints (`interrupt`: a
 * client that left with `on_disconnect: "cancel"`) asks `interrupt` instead:
 * the first cancel decides, as at the Agent Server, whose run takes the first
 * stop it is sent. `useStream` without resumable streams aborts its previous
 * stream (that cancel) before it asks the rollback; asked as such, the rollback
 * deleted the run's checkpoints only when its ask came before the run let the
 * thread go, and left its record saying it had kept them.
 */
export function strategyOf(spec: RunSpec, own: RunState, runs: Iterable<RunState>): MultitaskStrategy {
  if (spec.multitask !== "rollback") return spec.multitask;
  const others = [...runs].filter(
    (state) => state !== own && state.record.thread_id === spec.threadId && !state.finished,
  );
  const cancelled = (state: RunState) => state.controller.signal.aborted && !state.rollback;
  return others.length > 0 && others.every(cancelled) ? "interrupt" : "rollback";
}
