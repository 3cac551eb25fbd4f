/**
 * runs/: one run per thread across tabs and workers. `runOnThread` holds the
 * thread's Web Lock (an in-process fallback where `navigator.locks` is
 * missing) and applies a double-texting strategy; `isThreadRunning` and
 * `watchThreadRunning` tell a UI. It imports saver/ (types) and core/.
 */
export * from "./coordinator.js";
export { ThreadBusyError, RunInterruptedError } from "./errors.js";
export { runLockName, type RunLockManager, type RunLock, type RunLockOptions } from "./locks.js";
export { runChannelName } from "./signals.js";
