// Self-test of scripts/check-jsdoc.mjs (node:test):
//   node --test scripts/check-jsdoc.test.mjs
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { undocumentedExports } from "./check-jsdoc.mjs";

const names = (source) => undocumentedExports("x.ts", source).map((m) => `${m.line}:${m.name}`);

describe("undocumentedExports", () => {
  it("names every kind of exported declaration without JSDoc, with its line", () => {
    const source = [
      "export function f() {}",
      "export class C {}",
      "export interface I {}",
      "export type T = string;",
      "export const a = 1, b = 2;",
      "export enum E { A }",
    ].join("\n");
    assert.deepEqual(names(source), ["1:f", "2:C", "3:I", "4:T", "5:a, b", "6:E"]);
  });

  it("accepts JSDoc, skips line comments as docs, local declarations and re-exports", () => {
    const source = [
      "/** Documented. */",
      "export function f() {}",
      "// not JSDoc",
      "export const g = 1;",
      "function local() {}",
      'export { h } from "./h.js";',
      'export type { K } from "./k.js";',
    ].join("\n");
    assert.deepEqual(names(source), ["4:g"]);
  });

  it("lets the first signature of an overloaded function document the rest", () => {
    const source = [
      "/** Overloaded. */",
      "export function f(a: string): string;",
      "export function f(a: number): number;",
      "export function f(a: unknown): unknown { return a; }",
      "export function g(): void;",
      "export function g(): void {}",
    ].join("\n");
    assert.deepEqual(names(source), ["5:g"]);
  });
});
