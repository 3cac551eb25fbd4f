/**
 * "Lock now" in every tab: each tab holds the vault's key in its own memory,
 * so the tab that locks tells the others over a BroadcastChannel and each
 * reloads to the lock screen. (Auto-lock stays per tab: it follows that
 * tab's own input.)
 */
const CHANNEL = "langgraph-demo:lock-now";
/** Why this tab reloaded to its lock screen, for the lock screen to say (sessionStorage: this tab only). */
const REASON_KEY = "langgraph-demo:locked-because";

/** Reloads this tab to its lock screen, which then says `reason`. */
export function reloadLocked(reason: string): void {
  sessionStorage.setItem(REASON_KEY, reason);
  location.reload();
}

/** Why this tab reloaded locked, once: read and forgotten at each start. */
export function takeLockReason(): string | undefined {
  const reason = sessionStorage.getItem(REASON_KEY) ?? undefined;
  sessionStorage.removeItem(REASON_KEY);
  return reason;
}

/** Identifies a lock by its salt, to notice another tab locking or erasing. */
export function lockIdentity(salt: Uint8Array | undefined): string {
  return salt ? Array.from(salt, (b) => b.toString(16).padStart(2, "0")).join("") : "";
}

/** This tab's listening channel: the lock is posted on it, since a channel does not hear its own messages. */
let listening: BroadcastChannel | undefined;

/** Locks this tab and every other open tab of the app. */
export function lockEveryTab(): void {
  const channel = listening ?? new BroadcastChannel(CHANNEL);
  channel.postMessage("lock");
  if (channel !== listening) channel.close();
  location.reload();
}

/** Calls `lock` when another tab locks them all; returns the function that stops listening. */
export function onLockElsewhere(lock: () => void): () => void {
  const channel = new BroadcastChannel(CHANNEL);
  listening = channel;
  channel.onmessage = () => lock();
  return () => {
    channel.close();
    if (listening === channel) listening = undefined;
  };
}
