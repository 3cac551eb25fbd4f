/**
 * The checks after two sends at once on one thread (Node, Chromium, Firefox):
 * each run ended as the strategy says, the thread holds the expected
 * messages (so no user input vanished silently) with nothing left to run,
 * and its history is one chain (no hidden sibling branch).
 */
import { expect } from "vitest";
import type { IndexedDBSaver, MultitaskStrategy } from "../../../src/index.js";
import { expectedMessages, firstAndSecond, historyReport, threadState, type Outcome } from "./scenario.js";

export async function verifyTwoSends(
  strategy: MultitaskStrategy,
  a: Outcome,
  b: Outcome,
  reader: IndexedDBSaver,
  threadId: string,
  seedText: string,
  seedCheckpoints: number,
  delta = false,
) {
  const [first, second] = firstAndSecond(strategy, a, b);
  // reject: the first ran, the second was refused; enqueue: both ran;
  // interrupt and rollback: the first was stopped, the second ran.
  const errors = {
    reject: [undefined, "ThreadBusyError"],
    enqueue: [undefined, undefined],
    interrupt: ["RunInterruptedError", undefined],
    rollback: ["RunInterruptedError", undefined],
  }[strategy];
  expect([first.error, second.error]).toEqual(errors);
  if (strategy === "interrupt" || strategy === "rollback") {
    expect(first.strategy).toBe(strategy);
    // Stopped before its model finished thinking (while it thought, or before it began), not after:
    // told by the model itself, not guessed from the send's time, which a loaded machine stretched
    // past the think's delay with the stop still made in time.
    expect(first.thoughtOut).toBe(false);
  }
  const state = await threadState(reader, threadId, delta);
  expect(state.next).toEqual([]);
  expect(state.messages).toEqual(expectedMessages(strategy, seedText, first.text, second.text));
  const history = await historyReport(reader, threadId);
  expect(history.problem).toBeUndefined();
  // One run id per run that ran or was interrupted; the seed run has none.
  expect(history.runIds).toHaveLength({ reject: 1, enqueue: 2, interrupt: 2, rollback: 1 }[strategy]);
  // A rolled-back run leaves nothing: the seed, then the second's 3 checkpoints.
  if (strategy === "rollback") expect(history.checkpoints).toBe(seedCheckpoints + 3);
  return { first, second };
}
