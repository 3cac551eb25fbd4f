/**
 * Cross-tab names are a protocol between tabs of different builds: each one
 * is pinned here byte for byte, and the fan-out every channel uses keeps
 * telling the other listeners when one throws.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { crossTabName } from "./channel.js";
import { Listeners } from "./listeners.js";

describe("crossTabName", () => {
  it("keeps the bytes every shipped channel and lock name had", () => {
    const dbName = "my app:v2%";
    expect(crossTabName({ kind: "changes", dbName })).toBe("langgraph-checkpoint-indexeddb:v1:my app:v2%");
    expect(crossTabName({ kind: "runs", dbName })).toBe("langgraph-checkpoint-indexeddb:v1:my%20app%3Av2%25:runs");
    expect(crossTabName({ kind: "run", dbName, threadId: "t:1" })).toBe(
      "langgraph-checkpoint-indexeddb:v1:my%20app%3Av2%25:run:t%3A1",
    );
    expect(crossTabName({ kind: "key", dbName })).toBe("langgraph-checkpoint-indexeddb:v1:my%20app%3Av2%25:key");
    expect(crossTabName({ kind: "sync-status", dbName })).toBe("langgraph-checkpoint-indexeddb:sync:v1:my app:v2%");
    expect(crossTabName({ kind: "sync", dbName })).toBe("langgraph-checkpoint-indexeddb:sync:my app:v2%");
    expect(crossTabName({ kind: "agent-runs", dbName })).toBe(
      "langgraph-checkpoint-indexeddb:v1:my%20app%3Av2%25:agent-runs",
    );
    expect(crossTabName({ kind: "agent-run", dbName, runId: "r:1" })).toBe(
      "langgraph-checkpoint-indexeddb:v1:my%20app%3Av2%25:agent-run:r%3A1",
    );
  });

  it("never gives two databases or two threads one name in the encoded layout", () => {
    expect(crossTabName({ kind: "run", dbName: "a:run:b", threadId: "c" })).not.toBe(
      crossTabName({ kind: "run", dbName: "a", threadId: "b:run:c" }),
    );
    expect(crossTabName({ kind: "key", dbName: "a:key" })).not.toBe(crossTabName({ kind: "key", dbName: "a" }));
  });
});

describe("Listeners", () => {
  afterEach(() => vi.restoreAllMocks());

  it("tells every listener in order, and one that throws neither stops the others nor the caller", () => {
    const thrown = new Error("listener failed");
    const later: (() => void)[] = [];
    // Capture the microtask that re-throws, instead of letting it fail the test run as uncaught.
    vi.spyOn(globalThis, "queueMicrotask").mockImplementation((callback) => void later.push(callback));
    const listeners = new Listeners<number>();
    const seen: string[] = [];
    listeners.add((n) => seen.push(`a${n}`));
    const removeB = listeners.add(() => {
      throw thrown;
    });
    listeners.add((n) => seen.push(`c${n}`));
    expect(() => listeners.deliver(1)).not.toThrow();
    expect(seen).toEqual(["a1", "c1"]);
    expect(later).toHaveLength(1);
    expect(() => later[0]!()).toThrow(thrown);
    removeB();
    listeners.deliver(2);
    expect(seen).toEqual(["a1", "c1", "a2", "c2"]);
    listeners.clear();
    listeners.deliver(3);
    expect(seen).toHaveLength(4);
  });
});
