/**
 * Auto-lock: a locked app forgets its key after a while without input, by
 * reloading to the unlock screen (the key only ever lives in this page's
 * memory). A run in progress is let finish first. The delay is a per-device
 * preference, kept in localStorage (it is not a secret).
 */

/** Minutes of inactivity before locking; 0: never. */
export const AUTO_LOCK_CHOICES = [5, 15, 60, 0] as const;
const DEFAULT_MINUTES = 15;
const STORAGE_KEY = "langgraph-demo:auto-lock-minutes";
const INPUT_EVENTS = ["pointerdown", "keydown", "wheel", "touchstart"] as const;

export function autoLockMinutes(): number {
  const raw = globalThis.localStorage?.getItem(STORAGE_KEY);
  const stored = raw == null ? Number.NaN : Number(raw);
  return (AUTO_LOCK_CHOICES as readonly number[]).includes(stored) ? stored : DEFAULT_MINUTES;
}

export function setAutoLockMinutes(minutes: number): void {
  localStorage.setItem(STORAGE_KEY, String(minutes));
}

/**
 * Calls `lock` after `autoLockMinutes()` without input; `busy()` true puts it
 * off (an answer streaming). Returns the function that stops watching.
 */
export function watchIdle(lock: () => void, busy: () => boolean): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (ms = autoLockMinutes() * 60_000) => {
    clearTimeout(timer);
    timer = ms > 0 ? setTimeout(expire, ms) : undefined;
  };
  const expire = () => (busy() ? arm(30_000) : lock());
  const onInput = () => arm();
  for (const type of INPUT_EVENTS) addEventListener(type, onInput, { passive: true, capture: true });
  addEventListener("langgraph-demo:auto-lock-changed", onInput);
  arm();
  return () => {
    clearTimeout(timer);
    for (const type of INPUT_EVENTS) removeEventListener(type, onInput, { capture: true });
    removeEventListener("langgraph-demo:auto-lock-changed", onInput);
  };
}
