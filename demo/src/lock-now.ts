/**
 * "Lock now" in every tab: each tab holds the vault's key in its own memory,
 * so the tab that locks tells the others over a BroadcastChannel and each
 * reloads to the lock screen. (Auto-lock stays per tab: it follows that
 * tab's own input.)
 */
const CHANNEL = "langgraph-demo:lock-now";

/** Locks this tab and every other open tab of the app. */
export function lockEveryTab(): void {
  const channel = new BroadcastChannel(CHANNEL);
  channel.postMessage("lock");
  channel.close();
  location.reload();
}

/** Calls `lock` when another tab locks them all; returns the function that stops listening. */
export function onLockElsewhere(lock: () => void): () => void {
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = () => lock();
  return () => channel.close();
}
