/**
 * What the user typed and has not sent yet, kept across a reload of the tab
 * (and a lock screen in between): per thread the composer's text, the
 * approval card's edits (the memories as edited, the reason for a rejection)
 * and a message being edited in place. In sessionStorage, so it is this tab's only and goes when the tab
 * closes. A locked vault seals it like every other text the user typed
 * (Chromium writes sessionStorage to disk for session restore): plain only
 * while the app is unlocked.
 */
import type { Place, Vault } from "./settings.js";
import {
  DRAFT_KEY,
  DRAFT_PLACE,
  clearedSince,
  draftKeys,
  keep,
  prefixOf,
  read,
  resealKept,
  type ThreadDraftKind,
} from "./drafts-kept.js";

export { clearDrafts, dropPlainDrafts } from "./drafts-kept.js";

/** What the user typed in an approval card: the memories as edited (one per pending call), the reason. */
export interface CardEdits {
  memories: string[];
  reason: string;
}

/** A card's edits as kept: the question they answer ("" for a pause that asked none). */
interface KeptCard extends CardEdits {
  question: string;
}

/**
 * Keeps one text per thread of a kind (sealed at the place `session/<kind>/<thread id>`), each as the latest
 * call gave it.
 */
function createThreadKeeper(storage: Storage, kind: ThreadDraftKind) {
  const prefix = prefixOf(kind);
  const place = (threadId: string): Place => ["session", kind, threadId];
  const seqs = new Map<string, number>();
  const next = (threadId: string) => {
    const seq = (seqs.get(threadId) ?? 0) + 1;
    seqs.set(threadId, seq);
    return seq;
  };
  /** Saves whose seal is in flight: a lock change waits for them, so it seals again what was typed last. */
  const writing = new Set<Promise<void>>();
  /**
   * The lock changes and loads so far, one after another: a load reads after the lock changes asked for
   * before it (so it reads what its vault opens) and before those asked for after it (which seal for another
   * vault, one its vault does not open).
   */
  let turns: Promise<void> = Promise.resolve();
  /** Keeps `text`, unless a later call took over or every draft was removed (`cleared()`) before it lands. */
  const write = (vault: Vault, threadId: string, text: string, cleared = clearedSince(storage)): Promise<void> => {
    const mine = next(threadId);
    const current = () => seqs.get(threadId) === mine && !cleared();
    const done: Promise<void> = keep(storage, prefix + threadId, vault, text, place(threadId), current).finally(() =>
      writing.delete(done),
    );
    writing.add(done);
    return done;
  };
  /** `work` after the lock changes (and other work) queued before it: one at a time, in the order asked. */
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const run = turns.then(work);
    turns = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };
  return {
    save: (vault: Vault, threadId: string, text: string): Promise<void> => write(vault, threadId, text),
    serially,
    /**
     * A lock change: every thread's kept text is sealed again, from `from`'s sealing to `to`'s (the old key
     * no longer opens it, and a plain one must not stay plain once the app is locked). After the lock
     * changes before it, and after the saves in flight (sealed for `from`, they would land after the read).
     */
    reseal(from: Vault, to: Vault): Promise<void> {
      return serially(async () => {
        // The saves so far, the ones in flight included (sealed for `from`): a save begun after this point
        // seals for `to` (the session changed before this call), and a text it kept is not sealed again.
        const at = new Map(seqs);
        await Promise.allSettled(writing);
        const threads = draftKeys(storage).flatMap((key) => (key.startsWith(prefix) ? [key.slice(prefix.length)] : []));
        await Promise.all(
          threads.map((threadId) =>
            resealKept(storage, prefix + threadId, place(threadId), from, to, {
              // Typed again since the lock change began: that newer save is sealed for the new vault already.
              stale: () => seqs.get(threadId) !== at.get(threadId),
              write: (text, cleared) => write(to, threadId, text, cleared),
            }),
          ),
        );
      });
    },
    /**
     * The thread's kept text, if any this vault opens; read in turn with the lock changes (see `turns`):
     * read during one, a draft not yet sealed for the new vault would not open, and read after one asked for
     * later, a draft sealed for the next vault would not either. `first`: work done in the same turn before.
     */
    load(vault: Vault, threadId: string, first?: () => Promise<void>): Promise<string | undefined> {
      return serially(async () => {
        await first?.();
        return read(storage, prefix + threadId, vault, place(threadId));
      });
    },
    /** Forgets the thread's kept text. */
    clear(threadId: string): void {
      next(threadId);
      storage.removeItem(prefix + threadId);
    },
  };
}

/** `text` as JSON when `valid` says it is what was kept, else undefined. */
function parsed<T>(text: string | undefined, valid: (value: Partial<T>) => boolean): T | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<T>;
    return valid(value) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Keeps what was typed in each thread's approval card, for the question it
 * was typed for: a reload draws the card as the user left it, not as the
 * assistant proposed it. Edits for another question (another tab answered
 * this one, and the thread asked again) are never shown.
 */
export function createCardKeeper(storage: Storage = sessionStorage) {
  const texts = createThreadKeeper(storage, "approval");
  return {
    save(vault: Vault, threadId: string, questionId: string | undefined, edits: CardEdits): Promise<void> {
      const kept: KeptCard = { question: questionId ?? "", memories: edits.memories, reason: edits.reason };
      return texts.save(vault, threadId, JSON.stringify(kept));
    },
    reseal: texts.reseal,
    /**
     * The edits kept for the thread's question `questionId`, if any. Edits for another question are not
     * shown, and not removed: the read may be one a newer one overtook, or one made while the run goes on
     * and its question is not asked yet; an answer (or typing in the new question's card) replaces them.
     */
    async load(vault: Vault, threadId: string, questionId: string | undefined): Promise<CardEdits | undefined> {
      const kept = parsed<KeptCard>(
        await texts.load(vault, threadId),
        (kept) =>
          kept.question === (questionId ?? "") &&
          Array.isArray(kept.memories) &&
          kept.memories.every((memory) => typeof memory === "string") &&
          typeof kept.reason === "string",
      );
      return kept && { memories: kept.memories, reason: kept.reason };
    },
    /** Forgets the thread's card edits (answered, or the thread deleted). */
    clear: texts.clear,
  };
}

/** A message being edited in place: its index, its text as shown when the editor opened, what the editor holds. */
export interface MessageEdit {
  index: number;
  original: string;
  value: string;
}

/**
 * Keeps the open message editor of each thread: a reload opens it again on
 * the same message, holding what was typed, if that message still reads the
 * same (the chat checks).
 */
export function createEditKeeper(storage: Storage = sessionStorage) {
  const texts = createThreadKeeper(storage, "edit");
  return {
    /** Keeps the thread's open editor; undefined: it closed (sent or cancelled). */
    save(vault: Vault, threadId: string, edit: MessageEdit | undefined): Promise<void> {
      if (!edit) {
        texts.clear(threadId);
        return Promise.resolve();
      }
      return texts.save(vault, threadId, JSON.stringify(edit));
    },
    reseal: texts.reseal,
    /** The editor kept open on the thread, if any. */
    async load(vault: Vault, threadId: string): Promise<MessageEdit | undefined> {
      return parsed<MessageEdit>(
        await texts.load(vault, threadId),
        (edit) => Number.isInteger(edit.index) && typeof edit.original === "string" && typeof edit.value === "string",
      );
    },
    clear: texts.clear,
  };
}

/**
 * Keeps each thread's unsent message: what was typed in a thread stays with
 * it, so opening another thread shows that one's (or an empty composer), and
 * coming back shows it again. The latest text of each thread is also held in
 * memory, so a thread opened again before its seal landed reads what was typed last.
 */
export function createComposerKeeper(storage: Storage = sessionStorage) {
  const texts = createThreadKeeper(storage, "composer");
  const latest = new Map<string, string>();
  const save = (vault: Vault, threadId: string, text: string): Promise<void> => {
    latest.set(threadId, text);
    if (!text.trim()) {
      texts.clear(threadId);
      return Promise.resolve();
    }
    return texts.save(vault, threadId, text);
  };
  return {
    /** Keeps the thread's text ("" or blank: there is none). */
    save,
    /**
     * The thread's kept text, or "". A draft kept by a version that had one for the whole tab (the tab's
     * reload after an update) goes to the first thread asked for, the one the tab opens, where it was typed.
     */
    async load(vault: Vault, threadId: string): Promise<string> {
      const known = latest.get(threadId);
      if (known !== undefined) return known;
      // The earlier version's draft is moved in the read's turn with the lock changes: one asked for earlier
      // sealed it for `vault` already, a later one seals again what this moved (moved meanwhile, it was sealed
      // for the old vault: lost). And the thread's own read follows in that turn, before a later lock change.
      const stored = await texts.load(vault, threadId, async () => {
        if (storage.getItem(DRAFT_KEY) === null) return;
        const cleared = clearedSince(storage);
        const legacy = await read(storage, DRAFT_KEY, vault, DRAFT_PLACE);
        // Erased while it was read: not brought back as this thread's.
        if (legacy === undefined || cleared()) return;
        storage.removeItem(DRAFT_KEY);
        // Typed meanwhile: that is the text now.
        if (!latest.has(threadId)) await save(vault, threadId, legacy);
      });
      // Typed meanwhile: that is the text now.
      return latest.get(threadId) ?? stored ?? "";
    },
    /** A lock change: the threads' texts, and an earlier version's draft no thread took yet. */
    reseal(from: Vault, to: Vault): Promise<void> {
      const threads = texts.reseal(from, to);
      const legacy = texts.serially(() =>
        resealKept(storage, DRAFT_KEY, DRAFT_PLACE, from, to, {
          stale: () => false,
          write: (text, cleared) => keep(storage, DRAFT_KEY, to, text, DRAFT_PLACE, () => !cleared()),
        }),
      );
      return Promise.all([threads, legacy]).then(() => undefined);
    },
    /** Forgets the thread's text. */
    clear(threadId: string): void {
      latest.delete(threadId);
      texts.clear(threadId);
    },
  };
}

/** The per-thread keepers of a tab, with what a lock change and a deleted thread do to them. */
export function createThreadDrafts(storage: Storage = sessionStorage) {
  const composer = createComposerKeeper(storage);
  const cards = createCardKeeper(storage);
  const edits = createEditKeeper(storage);
  return {
    composer,
    cards,
    edits,
    /** A lock change: everything kept is sealed again for the new vault (see createThreadKeeper). */
    async reseal(from: Vault, to: Vault): Promise<void> {
      await Promise.all([composer.reseal(from, to), cards.reseal(from, to), edits.reseal(from, to)]);
    },
    /** The thread was deleted: nothing typed for it is kept. */
    clear(threadId: string): void {
      composer.clear(threadId);
      cards.clear(threadId);
      edits.clear(threadId);
    },
  };
}
