/**
 * How the demo's drafts (drafts.ts) are kept in the tab's storage: the keys,
 * a text sealed by a vault as JSON (sealed bytes in base64), reading one back
 * with a vault, sealing one again for another vault at a lock change, and
 * removing them all (erased) or the plain ones (at the lock screen).
 */
import type { Place, Vault } from "./settings.js";
import type { StoredText } from "./threads-db.js";

/**
 * The composer's text as kept before it was kept per thread: still read, as the draft of the thread opened
 * first, and sealed again at a lock change until then.
 */
export const DRAFT_KEY = "langgraph-demo:draft";
export const DRAFT_PLACE: Place = ["session", "draft"];
/** What is kept per thread: one entry per thread and kind, the thread's id after the kind's prefix. */
export type ThreadDraftKind = "approval" | "edit" | "composer";
const THREAD_KINDS: readonly ThreadDraftKind[] = ["approval", "edit", "composer"];
export const prefixOf = (kind: ThreadDraftKind) => `langgraph-demo:${kind}:`;

/** A stored text as a string: sealed bytes in base64. */
type Kept = { text: string } | { type: string; data: string };

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  // In slices: one call with a long draft's every byte as an argument overflows the stack.
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/**
 * Seals and keeps `text` under `key`, unless `current()` says a later call took over meanwhile (a slower seal
 * of an older text never overwrites a newer one).
 */
export async function keep(
  storage: Storage,
  key: string,
  vault: Vault,
  text: string,
  place: Place,
  current: () => boolean,
): Promise<void> {
  const sealed = await vault.seal(text, place);
  if (!current()) return;
  const kept: Kept = typeof sealed === "string" ? { text: sealed } : { type: sealed.type, data: toBase64(sealed.data) };
  try {
    storage.setItem(key, JSON.stringify(kept));
  } catch (error) {
    // Too long for the tab's storage: not kept, typing goes on.
    storage.removeItem(key);
    console.warn("draft not kept", error);
  }
}

/** A kept text as stored: undefined for one that is not a draft this app wrote. */
function storedText(raw: string): StoredText | undefined {
  try {
    const kept = JSON.parse(raw) as Kept;
    return "text" in kept ? kept.text : { type: kept.type, data: fromBase64(kept.data) };
  } catch {
    return undefined;
  }
}

/** `stored` as `vault` opens it, or undefined: sealed under another key, planted, plain to a locked vault. */
async function opened(stored: StoredText | undefined, vault: Vault, place: Place): Promise<string | undefined> {
  try {
    return stored === undefined ? undefined : await vault.open(stored, place);
  } catch {
    return undefined;
  }
}

/**
 * The text kept under `key`, or undefined (none, or one this vault cannot open). Nothing is removed: a read
 * may race a lock change (the text not sealed for the new vault yet) or come from a vault that is not the
 * current one, and erased a draft the right vault opens. What no vault opens goes at a lock change
 * (createThreadKeeper's reseal), a plain one at the lock screen (dropPlainDrafts).
 */
export async function read(storage: Storage, key: string, vault: Vault, place: Place): Promise<string | undefined> {
  const raw = storage.getItem(key);
  return raw ? opened(storedText(raw), vault, place) : undefined;
}

/** The keys of every draft this app keeps in `storage`: the composer's and the threads'. */
export function draftKeys(storage: Storage): string[] {
  const keys: string[] = [];
  for (let i = 0; i < storage.length; i++) {
    const key = storage.key(i);
    if (key !== null && (key === DRAFT_KEY || THREAD_KINDS.some((kind) => key.startsWith(prefixOf(kind)))))
      keys.push(key);
  }
  return keys;
}

/** How many times each storage had every draft removed (clearDrafts). */
const clears = new WeakMap<Storage, number>();

/**
 * Whether every draft of `storage` was removed since this call: a save or a lock change's seal begun
 * before that lands nothing, or it would bring back a draft of what was erased.
 */
export function clearedSince(storage: Storage): () => boolean {
  const at = clears.get(storage) ?? 0;
  return () => (clears.get(storage) ?? 0) !== at;
}

/** Removes every draft of the tab: the composer's and the threads' (everything was erased). */
export function clearDrafts(storage: Storage = sessionStorage): void {
  clears.set(storage, (clears.get(storage) ?? 0) + 1);
  for (const key of draftKeys(storage)) storage.removeItem(key);
}

/**
 * Removes the drafts kept as plain text: at the lock screen the app is locked, and a tab another tab's lock
 * sent there still held what it typed unlocked, as typed, until someone unlocked it. Sealed drafts stay for
 * the unlock.
 */
export function dropPlainDrafts(storage: Storage = sessionStorage): void {
  for (const key of draftKeys(storage)) {
    let plain = true;
    try {
      plain = "text" in (JSON.parse(storage.getItem(key) ?? "") as Kept);
    } catch {
      // Not a draft this app wrote: dropped too.
    }
    if (plain) storage.removeItem(key);
  }
}

/**
 * The text kept under `key`, sealed again from `from`'s sealing to `to`'s by `write`, unless `stale()` says a
 * newer text replaced it meanwhile (sealed for `to` already). `write` lands nothing once `cleared()` says
 * every draft was removed since the read.
 */
export async function resealKept(
  storage: Storage,
  key: string,
  place: Place,
  from: Vault,
  to: Vault,
  { stale, write }: { stale: () => boolean; write: (text: string, cleared: () => boolean) => Promise<void> },
): Promise<void> {
  // Everything cleared from here on (the app erased): what was read is not written back.
  const cleared = clearedSince(storage);
  const raw = storage.getItem(key);
  if (!raw) return;
  const stored = storedText(raw);
  const text = await opened(stored, from, place);
  if (stale() || cleared()) return;
  if (text !== undefined)
    await write(text, cleared).catch((error: unknown) => {
      // Not sealed for the new vault: the copy the old one opens goes (a lock leaves no plain draft behind).
      if (storage.getItem(key) === raw) storage.removeItem(key);
      throw error;
    });
  // Not the old vault's: left if the new one opens it (sealed for it already), else no vault of this app
  // does (planted, sealed under another key, plain at a lock): removed, not left on disk as it is.
  else if ((await opened(stored, to, place)) === undefined && storage.getItem(key) === raw) storage.removeItem(key);
}
