/**
 * The lock names and the in-process fallback's queueing rules, which must
 * match the Web Locks API's where runOnThread depends on them.
 */
import { describe, expect, it } from "vitest";
import { InProcessLockManager } from "../core/locks.js";
import { defaultLockManager, runLockName } from "./locks.js";

describe("runLockName", () => {
  it("is versioned, scoped per database and thread, and unambiguous", () => {
    expect(runLockName("my-app", "t1")).toBe("langgraph-checkpoint-indexeddb:v1:my-app:run:t1");
    expect(runLockName("a:run:b", "c")).not.toBe(runLockName("a", "b:run:c"));
  });
});

describe("InProcessLockManager", () => {
  it("grants one holder at a time, first come first served, releasing before request resolves", async () => {
    const locks = new InProcessLockManager();
    const order: string[] = [];
    let release!: () => void;
    const first = locks.request("x", {}, async () => {
      order.push("first");
      await new Promise<void>((resolve) => (release = resolve));
    });
    const second = locks.request("x", {}, async () => void order.push("second"));
    const third = locks.request("x", {}, async () => void order.push("third"));
    await Promise.resolve();
    expect(await locks.query()).toEqual({ held: ["x"], pending: ["x", "x"] });
    // ifAvailable fails while held, and also while others wait.
    expect(await locks.request("x", { ifAvailable: true }, async (lock) => lock)).toBeNull();
    release();
    await Promise.all([first, second, third]);
    expect(order).toEqual(["first", "second", "third"]);
    expect(await locks.query()).toEqual({ held: [], pending: [] });
    expect(await locks.request("x", { ifAvailable: true }, async (lock) => lock?.name)).toBe("x");
  });

  it("releases when the callback throws, and an aborted wait leaves the queue", async () => {
    const locks = new InProcessLockManager();
    await expect(locks.request("y", {}, async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    let release!: () => void;
    const holder = locks.request("y", {}, () => new Promise<void>((resolve) => (release = resolve)));
    const controller = new AbortController();
    const waiting = locks.request("y", { signal: controller.signal }, async () => "ran");
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
    expect((await locks.query()).pending).toEqual([]);
    release();
    await holder;
    expect((await locks.query()).held).toEqual([]);
  });

  it("is the default where navigator.locks is missing, one per realm", () => {
    const hasLocks = typeof navigator !== "undefined" && "locks" in navigator;
    expect(defaultLockManager() instanceof InProcessLockManager).toBe(!hasLocks);
    if (!hasLocks) expect(defaultLockManager()).toBe(defaultLockManager());
  });
});
