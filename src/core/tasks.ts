/** Scheduling helpers shared by the write batcher, the change feed and the loops that wait (sync, thread streams). */
import { IndexedDBCheckpointError } from "./errors.js";

/** Resolves in a later task: `scheduler.postTask` where there is one (no timer clamping), else a timer. */
export function nextTask(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: { postTask?(callback: () => void): Promise<void> } }).scheduler;
  if (scheduler?.postTask) return scheduler.postTask(() => undefined);
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * `load()` once and its promise kept for every later call (an app bundler's
 * `import()` checks its preloads at each call); a load that failed (a chunk
 * that could not be fetched: offline, or a new deployment's files) is
 * forgotten, so the next call tries again instead of failing for the page's
 * lifetime. Whether that fetches again is the browser's: Chromium does;
 * Firefox (ESR 153, checked) keeps a failed module for the page's life, so
 * there only a reload recovers (an app that must work offline caches its
 * chunks, as the demo's service worker does). The failure is a package
 * error, the browser's as its cause: a runtime failure, as every other
 * (core/errors.ts), where the browser threw a bare `TypeError`.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= load().catch((error: unknown) => {
      pending = undefined;
      throw new IndexedDBCheckpointError(
        `Could not load a part of langgraph-checkpoint-indexeddb (${String(error)}). If the app is offline or was deployed again, its files could not be fetched: an app that works offline caches its build.`,
        { cause: error },
      );
    }));
}

/**
 * Resolves after `ms`, or at once when one of `signals` aborts; the timer
 * and the listeners go either way (a loop that pauses many times leaves
 * nothing behind: no `AbortSignal.any` over a long-lived signal, which Node
 * 20 keeps a dependant of for that signal's life), and the timer keeps no
 * Node process alive.
 */
export function pause(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    (timer as { unref?: () => void }).unref?.();
    if (signals.some((signal) => signal.aborted)) done();
    else for (const signal of signals) signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Waits for `work`, or only until `signal` aborts: `work` goes on then, and
 * a failure of it after that is dropped (its caller has stopped waiting).
 * True when `work` settled first, false when the wait was cut short.
 */
export async function unlessAborted(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  const settled = work.then(() => true);
  settled.catch(() => undefined);
  let stop = (): void => undefined;
  const aborted = new Promise<false>((resolve) => {
    stop = () => resolve(false);
    if (signal.aborted) resolve(false);
    else signal.addEventListener("abort", stop, { once: true });
  });
  return Promise.race([settled, aborted]).finally(() => signal.removeEventListener("abort", stop));
}
