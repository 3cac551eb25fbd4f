/**
 * `langgraph-checkpoint-indexeddb/runs`: the cross-tab contract behind
 * `runOnThread` (which the root entry exports), for code that coordinates
 * with it from outside this package, or another way:
 *
 * - `runLockName(dbName, threadId)`: the Web Lock a run holds;
 * - `runChannelName(dbName)`: the BroadcastChannel of stop requests and
 *   "started"/"ended" notices;
 * - `RunLockManager`: what `runOnThread({ locks })` accepts in place of
 *   `navigator.locks` (and its in-process fallback).
 *
 * @module
 */
export { runLockName, runChannelName, type RunLockManager, type RunLock, type RunLockOptions } from "./runs/index.js";
