/**
 * The composer's unsent text, kept across a reload of the tab (and a lock
 * screen in between): in sessionStorage, so it is this tab's only and goes
 * when the tab closes. A locked vault seals it like every other text the user
 * typed (Chromium writes sessionStorage to disk for session restore): plain
 * only while the app is unlocked.
 */
import type { Place, Vault } from "./settings.js";
import type { StoredText } from "./threads-db.js";

const DRAFT_KEY = "langgraph-demo:draft";
const DRAFT_PLACE: Place = ["session", "draft"];

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

/** Keeps the composer's text as the latest call gave it (a slower seal of an older text never overwrites it). */
export function createDraftKeeper(storage: Storage = sessionStorage) {
  let seq = 0;
  return {
    async save(vault: Vault, text: string): Promise<void> {
      const mine = ++seq;
      if (!text.trim()) {
        storage.removeItem(DRAFT_KEY);
        return;
      }
      const sealed = await vault.seal(text, DRAFT_PLACE);
      if (mine !== seq) return;
      const kept: Kept =
        typeof sealed === "string" ? { text: sealed } : { type: sealed.type, data: toBase64(sealed.data) };
      try {
        storage.setItem(DRAFT_KEY, JSON.stringify(kept));
      } catch (error) {
        // Too long for the tab's storage: the draft is not kept, typing goes on.
        storage.removeItem(DRAFT_KEY);
        console.warn("draft not kept", error);
      }
    },
    /**
     * The kept draft, or "" (none, or one this vault cannot open: sealed under another key, planted, or typed
     * as plain text before another tab locked the app). One that does not open is removed: a plain one is
     * not left on disk once the app is locked.
     */
    async load(vault: Vault): Promise<string> {
      const raw = storage.getItem(DRAFT_KEY);
      if (!raw) return "";
      try {
        const kept = JSON.parse(raw) as Kept;
        const stored: StoredText = "text" in kept ? kept.text : { type: kept.type, data: fromBase64(kept.data) };
        return await vault.open(stored, DRAFT_PLACE);
      } catch {
        if (storage.getItem(DRAFT_KEY) === raw) storage.removeItem(DRAFT_KEY);
        return "";
      }
    },
    clear(): void {
      seq++;
      storage.removeItem(DRAFT_KEY);
    },
    /**
     * Removes a draft kept as plain text: at the lock screen the app is locked, and a tab another tab's lock
     * sent there still held the draft it typed unlocked, as typed, until someone unlocked it. Sealed drafts
     * stay for the unlock.
     */
    dropPlain(): void {
      const raw = storage.getItem(DRAFT_KEY);
      if (raw === null) return;
      let plain = true;
      try {
        plain = "text" in (JSON.parse(raw) as Kept);
      } catch {
        // Not a draft this app wrote: dropped too.
      }
      if (plain) storage.removeItem(DRAFT_KEY);
    },
  };
}
