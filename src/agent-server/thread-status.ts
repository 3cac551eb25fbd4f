/**
 * A thread record's status as its runs start and end, as the Agent Server
 * keeps it: `busy` while a run of the thread goes or waits, `interrupted`
 * when the last run paused (tasks left: an interrupt or a static
 * breakpoint), `error` when it failed, `idle` otherwise (a run stopped by a
 * cancel too, unless an interrupt of the thread still waits for an answer).
 */
import type { ServedGraph } from "./graphs.js";
import type { RunHooks } from "./run-execute.js";
import type { AgentThreadStore, ThreadStatus } from "./threads.js";

/**
 * The registry's hooks writing the thread's status into `threads`. A
 * thread's status writes take turns: a run's end reads whether another run
 * goes, then the state, then writes, and a run starting meanwhile must write
 * `busy` after it (helper-54: it was left `idle` while running).
 * `busy(threadId, runId)`: whether a run of the thread other than `runId`
 * goes or waits.
 */
export function threadStatusHooks(
  threads: AgentThreadStore,
  graphs: Readonly<Record<string, ServedGraph>>,
  busy: (threadId: string, runId: string) => Promise<boolean>,
): RunHooks {
  const writes = new Map<string, Promise<unknown>>();
  /** The status of a run's thread when it was accepted, unless another run held it then (by run id). */
  const before = new Map<string, ThreadStatus>();
  const inTurn = <T>(threadId: string, write: () => Promise<T>): Promise<T> => {
    const turn = (writes.get(threadId) ?? Promise.resolve()).then(write, write);
    const settled = turn.catch(() => undefined);
    writes.set(threadId, settled);
    // The map holds only threads with a write under way.
    void settled.then(() => writes.get(threadId) === settled && writes.delete(threadId));
    return turn;
  };
  return {
    // Busy as soon as the run is answered: a thread list read then shows it running.
    accepted: (run) =>
      inTurn(run.thread_id, async () => {
        const prior = (await threads.get(run.thread_id))?.status;
        if (prior !== undefined && prior !== "busy") before.set(run.run_id, prior);
        await threads.patch(run.thread_id, { status: "busy" });
      }),
    started: (run) =>
      inTurn(run.thread_id, async () => {
        const found = (await threads.patch(run.thread_id, { status: "busy" })) !== undefined;
        // The thread is gone: the run stops here, and no end of it is reported.
        if (!found) before.delete(run.run_id);
        return found;
      }),
    ended: (run, error) =>
      inTurn(run.thread_id, async () => {
        const prior = before.get(run.run_id);
        before.delete(run.run_id);
        if (await busy(run.thread_id, run.run_id)) return;
        const graph = graphs[run.assistant_id];
        // A state LangGraph cannot read (a run that failed on its input left it in the pending writes,
        // and a rollback since deleted the checkpoints over it) shows no interrupt waiting: were the
        // throw let through, the thread would stay "busy" for good.
        // Read only where it decides something: a run that failed otherwise than on strict_resume is an error
        // whatever its state holds.
        const refused = isStrictResumeRefusal(error);
        const state =
          graph && (error === undefined || refused)
            ? await graph.getState({ configurable: { thread_id: run.thread_id } }).catch(() => undefined)
            : undefined;
        const waiting = state?.tasks.some((task) => task.interrupts.length > 0) ?? false;
        // A run stopped (a cancel, useStream's Stop, or a newer run's interrupt) leaves a task to run
        // in its last checkpoint, but did not pause for anyone: idle, as the Agent Server sets it,
        // unless an interrupt still waits for an answer (a rollback onto a paused thread, or a run
        // cancelled before it ran on one).
        const paused = run.status === "interrupted" ? waiting : (state?.next.length ?? 0) > 0;
        // A stopped run that left no checkpoint of its own (rolled back, or cancelled before it ran)
        // leaves the thread as it found it: paused at a static breakpoint stays interrupted, though
        // no task holds an interrupt (bb530bc set it idle), and an earlier failure stays an error.
        const own = (state?.metadata as { run_id?: unknown } | undefined)?.run_id === run.run_id;
        const kept = error === undefined && run.status === "interrupted" && !own ? prior : undefined;
        // A resume strict_resume refused (LangGraph's UnknownInterruptError, raised before anything is
        // written) while an interrupt waits: "the thread stays as it was", as the SDK says of the Agent
        // Server, paused on it. Told by its error, not by the traces it left: a resumed node stopped by
        // its run's `timeout`, or cut short with its tab, also leaves no checkpoint and no task's error,
        // yet it ran and failed (an error, as a resumed node that failed with its error on its task).
        const untouched = !own && waiting && refused;
        const failed = error !== undefined && !untouched;
        const status = failed ? "error" : paused || error !== undefined ? "interrupted" : "idle";
        await threads.patch(run.thread_id, { status: kept ?? status });
        // A run of another tab's server may have taken the thread and written "busy" meanwhile (its
        // writes do not take turns with these): one that holds it now is seen, and said again.
        if (await busy(run.thread_id, run.run_id)) await threads.patch(run.thread_id, { status: "busy" });
      }),
  };
}

/** LangGraph's refusal of a resume under `strict_resume`, known by its name as LangGraph's own check knows it. */
function isStrictResumeRefusal(error: unknown): boolean {
  return (error as { name?: unknown } | undefined)?.name === "UnknownInterruptError";
}
