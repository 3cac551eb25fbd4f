/**
 * `sameClone` on values only an edited row holds: cycles, which structured
 * clone keeps. It must answer, not recurse until the stack overflows.
 */
import { describe, expect, it } from "vitest";
import { sameClone } from "./equality.js";

/** A list holding itself. */
const selfList = (): unknown[] => {
  const list: unknown[] = [];
  list.push(list);
  return list;
};

describe("sameClone with cycles", () => {
  it("a list holding itself equals another such list, and not a list holding a number", () => {
    expect(sameClone(selfList(), selfList())).toBe(true);
    expect(sameClone(selfList(), [[1]])).toBe(false);
  });

  it("a list holding itself against a cycle of two lists: an answer, not a stack overflow", () => {
    // Met beside `b` then `c` then `b` again: a memory of one partner per object never closes this loop.
    const b: unknown[] = [];
    const c: unknown[] = [b];
    b.push(c);
    expect(sameClone(selfList(), b)).toBe(true);
    const d: unknown[] = [];
    const e: unknown[] = [d, 1];
    d.push(e);
    expect(sameClone(selfList(), d)).toBe(false);
  });

  it("objects and maps that hold themselves", () => {
    const object = (): Record<string, unknown> => {
      const value: Record<string, unknown> = { n: 1 };
      value.self = value;
      return value;
    };
    expect(sameClone(object(), object())).toBe(true);
    const map = (n: number) => {
      const value = new Map<string, unknown>([["n", n]]);
      value.set("self", value);
      return value;
    };
    expect(sameClone(map(1), map(1))).toBe(true);
    expect(sameClone(map(1), map(2))).toBe(false);
  });
});
