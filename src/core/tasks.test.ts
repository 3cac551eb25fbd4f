/** `loadOnce`: one load for every call, and a failed load tried again; `pause` over several signals. */
import { describe, expect, it } from "vitest";
import { loadOnce, pause } from "./tasks.js";
import { IndexedDBCheckpointError } from "./errors.js";

describe("loadOnce", () => {
  it("loads once for every call, concurrent or later", async () => {
    let loads = 0;
    const load = loadOnce(async () => ({ n: ++loads }));
    const [a, b] = await Promise.all([load(), load()]);
    expect(await load()).toBe(a);
    expect(b).toBe(a);
    expect(loads).toBe(1);
  });

  it("forgets a failed load: the next call loads again (a chunk that could not be fetched while offline)", async () => {
    let loads = 0;
    const load = loadOnce(async () => {
      loads += 1;
      if (loads === 1) throw new TypeError("Failed to fetch dynamically imported module");
      return "module";
    });
    // A package error (every runtime failure is one: README, Errors), the browser's as its cause.
    const failure = await load().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(IndexedDBCheckpointError);
    expect((failure as Error).message).toMatch(
      /^Could not load a part .*Failed to fetch dynamically imported module.*offline/,
    );
    expect((failure as Error).cause).toBeInstanceOf(TypeError);
    expect(await load()).toBe("module");
    expect(await load()).toBe("module");
    expect(loads).toBe(2);
  });
});

describe("pause", () => {
  /** A signal whose abort listeners are counted as they are added and removed (a `once` one too, when it runs). */
  function counted() {
    const controller = new AbortController();
    const listeners = new Set<unknown>();
    const { signal } = controller;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = (...args: Parameters<typeof add>) => (listeners.add(args[1]), add(...args));
    signal.removeEventListener = (...args: Parameters<typeof remove>) => (listeners.delete(args[1]), remove(...args));
    return { controller, signal, listening: () => listeners.size };
  }

  it("ends at the first of its signals to abort, and leaves a listener on none of them", async () => {
    const long = counted();
    const notice = counted();
    const waiting = pause(60_000, long.signal, notice.signal);
    expect([long.listening(), notice.listening()]).toEqual([1, 1]);
    notice.controller.abort();
    await waiting;
    expect([long.listening(), notice.listening()]).toEqual([0, 0]);
    long.controller.abort();
    // One already aborted: no wait, and no listener added.
    const fresh = counted();
    await pause(60_000, fresh.signal, long.signal);
    expect(fresh.listening()).toBe(0);
  });
});
