/**
 * The demo's lock changes on its Session in Chromium, on its real databases: a change that committed (the
 * lock record changed, the data in the new databases) and then could not delete the old ones hands over the
 * new session all the same (OldDataLeftError carries it), so the app goes on with it instead of a closed one;
 * the old databases stay marked and go at the next start.
 *
 * And the passphrase change cut short: cut after each step (the change recorded; the saver re-keyed; the
 * saver and the store; the texts sealed again without the lock record; the lock record written with the
 * change's record left), then opened as a reload opens it (demo/src/session-lock.ts `unlockVault`, then
 * `Session.open`) with the old passphrase and with the new one. Every thread, memory, title, instruction
 * and setting reads back, the change is undone (old passphrase) or finished (new one), and the next start
 * is clean: no record, and only that passphrase opens. A change's record kept and put back after the change
 * settled (finished, or undone) is stale: it opens nothing for the passphrase the settling retired. Settings
 * tells of a change that stopped halfway as a warning that takes the focus, its Change button held.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { afterEach, expect, it } from "vitest";
import { memoryNamespace } from "../../demo/src/agent.js";
import { eraseEverything } from "../../demo/src/boot.js";
import { IndexedDBSaver, IndexedDBStore } from "../../demo/src/lib.js";
import { openTexts, storeTexts, unlockVault } from "../../demo/src/session-lock.js";
import { KeyChangeCutError, OldDataLeftError, Session } from "../../demo/src/session.js";
import { DATABASES, WrongPassphraseError, plainVault, titlePlace, unlock } from "../../demo/src/settings.js";
import { DemoDB, type KeyChangeRow, type LockRow, type PendingDeletesRow } from "../../demo/src/threads-db.js";
import { keyChangeRow, newLockKey } from "../../demo/src/vault-key-change.js";
import { existingDatabases, finishPendingDeletes } from "../../demo/src/vault-migration.js";
import { createSettings } from "../../demo/src/ui/settings.js";
import { demoAtTestSpeed } from "../support/demo-speed.js";
import { byDepth } from "../support/depth.js";

demoAtTestSpeed(); // The same code, with keys at a few PBKDF2 rounds and no model pace.
let session: Session | undefined;
let db = new DemoDB();
afterEach(async () => {
  await session?.close();
  session = undefined;
  await eraseEverything(db);
  db = new DemoDB();
});

const PASSPHRASE = "a passphrase for the lock test";

/** The thread's messages, as text. */
async function transcript(s: Session, threadId: string): Promise<string[]> {
  const messages = ((await s.state(threadId)).values as { messages?: BaseMessage[] }).messages ?? [];
  return messages.map((m) => String(m.content));
}

/** Runs `work` while the first delete of database `name` fails, as a refused delete does. */
async function failingDeleteOf<T>(name: string, work: () => Promise<T>): Promise<T> {
  const original = IDBFactory.prototype.deleteDatabase;
  let failed = false;
  IDBFactory.prototype.deleteDatabase = function (this: IDBFactory, asked: string) {
    if (asked !== name || failed) return original.call(this, asked);
    failed = true;
    const request = {} as IDBOpenDBRequest;
    setTimeout(() => request.onerror?.call(request, new Event("error")), 0);
    return request;
  };
  try {
    return await work();
  } finally {
    IDBFactory.prototype.deleteDatabase = original;
  }
}

it("a lock whose old databases could not be deleted hands over the locked session; they go at the next start", async () => {
  const before = await Session.open(db, plainVault);
  session = before;
  await before.send("t", "hello before the lock", () => {});
  const error: unknown = await failingDeleteOf(DATABASES.plain.store, () => before.lock(PASSPHRASE)).catch((e) => e);
  expect(error).toBeInstanceOf(OldDataLeftError);
  const left = error as OldDataLeftError<Session>;
  expect(left.message).toMatch(/^Locked, but the unencrypted copy of your data could not be deleted yet/);
  session = left.session;
  expect(session.vault.locked).toBe(true);
  // The new session is open and whole: the conversation reads, and goes on.
  expect(await transcript(session, "t")).toContain("hello before the lock");
  await session.send("t", "hello after the lock", () => {});
  expect(await transcript(session, "t")).toContain("hello after the lock");
  // The old session moved: it refuses another lock change (it would take the new databases for leftovers).
  await expect(before.lock(PASSPHRASE)).rejects.toThrow(/lock changed already/);
  // What was left stays marked, and the next start deletes it.
  const marker = (await db.settings.get("pending-deletes")) as PendingDeletesRow | undefined;
  expect(marker?.names).toContain(DATABASES.plain.store);
  expect((await existingDatabases()).has(DATABASES.plain.store)).toBe(true);
  await finishPendingDeletes(db);
  expect((await existingDatabases()).has(DATABASES.plain.store)).toBe(false);
  expect(await db.settings.get("pending-deletes")).toBeUndefined();
  // The locked session still reads its own databases.
  expect(await transcript(session, "t")).toContain("hello after the lock");
});

const OLD = "the passphrase before the change";
const NEW = "the passphrase after the change";
const API_KEY = "sk-kept-through-the-change";

/** A locked app with a thread (title, instructions), a memory and model settings, all under OLD. */
async function lockedApp(): Promise<Session> {
  const plain = await Session.open(db, plainVault);
  session = plain;
  const locked = await plain.lock(OLD);
  session = locked;
  await locked.send("t", "hello before the change", () => {});
  await locked.setInstructions("t", "answer in verse");
  await locked.setModel({ ...locked.model, apiKey: API_KEY });
  await locked.store.put(memoryNamespace(locked.userId), "m", { text: "likes tea" });
  return locked;
}

/** Runs `work` while `target[name]` rejects, as a write refused for quota does. */
async function failing<T, K extends string>(target: Record<K, unknown>, name: K, work: () => Promise<T>): Promise<T> {
  const original = target[name];
  target[name] = () => Promise.reject(new DOMException("The quota is exceeded.", "QuotaExceededError"));
  try {
    return await work();
  } finally {
    target[name] = original;
  }
}

type Cut = "recorded" | "saver" | "saver and store" | "texts sealed" | "lock written";

/** The change from OLD to NEW, cut after the step `cut`; then the page's session is closed, as a reload does. */
async function cutChange(locked: Session, cut: Cut): Promise<void> {
  const change = () => locked.changePassphrase(OLD, NEW);
  const error: unknown =
    cut === "recorded"
      ? await failing(IndexedDBSaver.prototype as never, "changeKey", change).catch((e: unknown) => e)
      : cut === "saver"
        ? await failing(IndexedDBStore.prototype as never, "changeKey", change).catch((e: unknown) => e)
        : await failing(db as never, "transaction", change).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(KeyChangeCutError);
  expect((error as Error).message).toMatch(/unlock with the new passphrase to finish the change/);
  const record = (await db.settings.get("key-change")) as KeyChangeRow;
  expect(record.from.salt).toEqual(((await db.lock()) as LockRow).salt);
  if (cut === "texts sealed" || cut === "lock written") {
    // The states one transaction never leaves, made by hand: a recovery must take them all the same.
    const next = await unlock(record.to, NEW);
    const texts = await openTexts(db, locked.vault);
    const settings = { model: locked.model, sync: locked.syncSettings };
    await storeTexts(db, next, texts, settings, cut === "lock written" ? record.to : record.from);
    await db.settings.put(record);
  }
  await locked.close();
  session = undefined;
}

/** Opens the app as the lock screen does (a fresh database connection, as after a reload). */
async function reopen(passphrase: string): Promise<Session> {
  db.close();
  db = new DemoDB();
  const lock = (await db.lock())!;
  const { vault, problems } = await unlockVault(db, lock, passphrase);
  const opened = await Session.open(db, vault);
  opened.problems.push(...problems);
  return opened;
}

/** Everything `lockedApp` wrote, as `s` reads it. */
async function contents(s: Session) {
  const messages = ((await s.state("t")).values as { messages?: BaseMessage[] }).messages ?? [];
  const row = await s.db.threads.get("t");
  return {
    messages: messages.map((m) => String(m.content)),
    title: await s.vault.open(row!.title, titlePlace("t")),
    instructions: await s.instructions("t"),
    apiKey: s.model.apiKey,
    memories: (await s.memories()).map((m) => m.text),
  };
}

const UNDO = [OLD, "undone", NEW] as const;
const FINISH = [NEW, "finished", OLD] as const;
/**
 * At the fast depth each cut is opened with one passphrase, and the last with both: the four ways a
 * passphrase reaches the keys (on the lock record or on the change's other lock; undoing or finishing)
 * are all taken. Every cut with both at the full depth.
 */
const RUNS: [Cut, typeof UNDO | typeof FINISH][] = byDepth(
  [
    ["recorded", FINISH],
    ["saver", UNDO],
    ["saver and store", FINISH],
    ["texts sealed", UNDO],
    ["lock written", UNDO],
    ["lock written", FINISH],
  ],
  (["recorded", "saver", "saver and store", "texts sealed", "lock written"] as const).flatMap((cut) => [
    [cut, UNDO],
    [cut, FINISH],
  ]),
);

for (const [cut, [passphrase, done, other]] of RUNS)
  it(`cut after "${cut}", the ${passphrase === OLD ? "old" : "new"} passphrase opens everything and the change is ${done}`, async () => {
    await cutChange(await lockedApp(), cut);
    if (cut === "saver") {
      // A wrong passphrase fails as it always did (tried on both locks), and writes nothing.
      const before = await db.settings.toArray();
      await expect(reopen("not the passphrase at all")).rejects.toBeInstanceOf(WrongPassphraseError);
      expect(await db.settings.toArray()).toEqual(before);
    }
    session = await reopen(passphrase);
    expect(await contents(session)).toEqual({
      messages: expect.arrayContaining(["hello before the change"]) as unknown,
      title: "hello before the change",
      instructions: "answer in verse",
      apiKey: API_KEY,
      memories: ["likes tea"],
    });
    expect(session.problems).toEqual([expect.stringContaining(`it is ${done} now`)]);
    // It goes on: a new turn is stored under the key that now opens the app.
    await session.send("t", "hello after", () => {});
    await session.close();
    session = undefined;
    // The next start is clean: no record left, only this passphrase opens, and everything reads.
    expect(await db.settings.get("key-change")).toBeUndefined();
    await expect(reopen(other)).rejects.toBeInstanceOf(WrongPassphraseError);
    session = await reopen(passphrase);
    expect(session.problems).toEqual([]);
    expect((await contents(session)).messages).toContain("hello after");
  });

it("a change record the user's key did not seal opens nothing: the lock record's passphrase opens as usual", async () => {
  const locked = await lockedApp();
  // Planted by someone without the passphrase: their own lock as `to`, keys sealed by their key.
  const theirs = await newLockKey("someone else's passphrase");
  const lock = (await db.lock())!;
  const fake = { row: lock, vault: theirs.vault, bits: crypto.getRandomValues(new Uint8Array(32)) };
  await db.settings.put(await keyChangeRow(fake, theirs));
  await locked.close();
  session = undefined;
  // Their passphrase opens their row, but the key it opens does not open the lock record: refused, unwritten.
  const before = await db.settings.toArray();
  await expect(reopen("someone else's passphrase")).rejects.toBeInstanceOf(WrongPassphraseError);
  expect(await db.settings.toArray()).toEqual(before);
  // The user's passphrase opens everything, with nothing to settle; the record is dropped.
  session = await reopen(OLD);
  expect(session.problems).toEqual([]);
  expect((await contents(session)).memories).toEqual(["likes tea"]);
  expect(await db.settings.get("key-change")).toBeUndefined();
});

/** The change's record as it was while the change ran (read when the store's key changes), and the change. */
async function recordOfChange(work: () => Promise<Session>): Promise<{ record: KeyChangeRow; next: Session }> {
  const original = IndexedDBStore.prototype.changeKey;
  let record: KeyChangeRow | undefined;
  IndexedDBStore.prototype.changeKey = async function (this: IndexedDBStore, ...args) {
    record ??= (await db.settings.get("key-change")) as KeyChangeRow;
    return original.apply(this, args);
  };
  try {
    const next = await work();
    return { record: record!, next };
  } finally {
    IndexedDBStore.prototype.changeKey = original;
  }
}

/** `record` put back once the change settled (the page closed): `refused` opens nothing, `opens` all, as usual. */
async function putBack(record: KeyChangeRow, refused: string, opens: string): Promise<void> {
  await session?.close();
  session = undefined;
  await db.settings.put(record);
  await expect(reopen(refused)).rejects.toBeInstanceOf(WrongPassphraseError);
  session = await reopen(opens);
  expect(session.problems).toEqual([]);
  expect(await db.settings.get("key-change")).toBeUndefined();
  expect((await contents(session)).memories).toEqual(["likes tea"]);
}

it("a finished change's record, put back, is stale: the old passphrase stays refused", async () => {
  const { record, next } = await recordOfChange(async () => (await lockedApp()).changePassphrase(OLD, NEW));
  session = next;
  // Kept by someone who knows the old passphrase (it leaked: the reason for the change), and put back.
  await putBack(record, OLD, NEW);
});

it("an undone change's record, put back, is stale: the passphrase typed in the failed change stays refused", async () => {
  const locked = await lockedApp();
  const { record } = await recordOfChange(() =>
    failing(db as never, "transaction", () => locked.changePassphrase(OLD, NEW)).catch(() => locked),
  );
  await locked.close();
  session = await reopen(OLD);
  expect(session.problems).toEqual([expect.stringContaining("it is undone now")]);
  await putBack(record, NEW, OLD);
});

it("a change record not in this app's shape is stale: a wrong passphrase is only wrong, the right one opens", async () => {
  const locked = await lockedApp();
  const lock = (await db.lock())!;
  const other = (await newLockKey(NEW)).row;
  await locked.close();
  session = undefined;
  // Before, the first failed a mistyped passphrase as an invalid lock ("Erase all data to start again"), and
  // the second every passphrase, the right one too (a TypeError on the missing row), for as long as it stayed.
  const shapes = [
    { to: { ...other, iterations: 1 } },
    { to: undefined },
    { toKey: { type: "not a sealing", data: new Uint8Array(40) } },
  ];
  for (const shape of shapes) {
    await db.settings.put({
      key: "key-change",
      v: 1,
      from: lock,
      to: other,
      toKey: "",
      fromKey: "",
      ...shape,
    } as never);
    await expect(reopen("not the passphrase at all")).rejects.toBeInstanceOf(WrongPassphraseError);
    session = await reopen(OLD);
    expect(session.problems).toEqual([]);
    expect(await db.settings.get("key-change")).toBeUndefined();
    await session.close();
    session = undefined;
  }
});

it("two tabs changing the passphrase at once: one changes, the other is refused, and a cut stays settleable", async () => {
  const locked = await lockedApp();
  const other = new DemoDB();
  const tab = await Session.open(other, locked.vault);
  // The first tab's change is cut after its saver re-keyed (a write refused, or the tab closed).
  const outcomes = await failing(IndexedDBStore.prototype as never, "changeKey", () =>
    Promise.all(
      [locked, tab].map((s, i) => s.changePassphrase(OLD, `${NEW}, tab ${i}`).catch((e: unknown) => e as Error)),
    ),
  );
  await Promise.all([locked.close(), tab.close()]);
  other.close();
  session = undefined;
  // Before, both wrote their record, the second over the first: no passphrase opened the saver any more.
  session = await reopen(OLD);
  expect(await contents(session)).toMatchObject({ title: "hello before the change", memories: ["likes tea"] });
  // The second waited for the first, found its record and wrote nothing.
  expect(outcomes.map((e) => (e as Error).message)).toEqual(
    expect.arrayContaining([expect.stringMatching(/stopped halfway/), expect.stringMatching(/did not finish/)]),
  );
});

it("a lock screen drawn before a change does not drop a later change's record: the lock record is read again", async () => {
  const locked = await lockedApp();
  // A tab at its lock screen since before the change OLD -> NEW: it holds the OLD lock row.
  const drawn = (await db.lock())!;
  session = await locked.changePassphrase(OLD, NEW);
  // Then a change NEW -> another, cut after the saver re-keyed.
  const third = "a third passphrase, cut short";
  const cut = await failing(IndexedDBStore.prototype as never, "changeKey", () =>
    session!.changePassphrase(NEW, third),
  ).catch((e: unknown) => e);
  expect(cut).toBeInstanceOf(KeyChangeCutError);
  await session.close();
  session = undefined;
  // The old passphrase, typed at that screen, opens nothing and leaves the record.
  await expect(unlockVault(db, drawn, OLD)).rejects.toBeInstanceOf(WrongPassphraseError);
  expect(await db.settings.get("key-change")).toBeDefined();
  session = await reopen(NEW);
  expect(session.problems).toEqual([expect.stringContaining("it is undone now")]);
  expect((await contents(session)).memories).toEqual(["likes tea"]);
});

it("Settings tells of a change that stopped halfway as a warning, holds Change, and gives the message the focus", async () => {
  const locked = await (await Session.open(db, plainVault)).lock(OLD);
  session = locked;
  const settings = createSettings({
    session: () => locked,
    threads: () => [],
    changePassphrase: async (current, next) => void (await locked.changePassphrase(current, next)),
    // Not reached from the passphrase form.
    lock: () => Promise.reject(new Error("not in this test")),
    lockNow: () => undefined,
    removeLock: () => Promise.reject(new Error("not in this test")),
    openThread: () => undefined,
  });
  document.body.append(settings.el);
  try {
    settings.open();
    const field = (id: string) => settings.el.querySelector<HTMLInputElement>(`[data-testid="${id}"]`)!;
    field("current-passphrase").value = OLD;
    field("new-passphrase").value = field("new-passphrase-again").value = NEW;
    const change = settings.el.querySelector<HTMLButtonElement>('[data-testid="change-passphrase"]')!;
    // The passphrase form's own status line (the removal has one too).
    const status = change.form!.parentElement!.querySelector<HTMLElement>('[data-testid="lock-status"]')!;
    await failing(IndexedDBStore.prototype as never, "changeKey", async () => {
      change.click();
      await expect.poll(() => status.textContent, { timeout: 15_000 }).toMatch(/^The change stopped halfway/);
    });
    expect([status.classList.contains("warning"), status.classList.contains("failed")]).toEqual([true, false]);
    expect(document.activeElement).toBe(status);
    // A retry in this page is refused until a reload settles the change: the button stays held.
    expect(change.disabled).toBe(true);
  } finally {
    settings.el.remove();
  }
});
