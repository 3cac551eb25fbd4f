/**
 * The demo's lock changes on its Session in Chromium, on its real
 * databases: a change that committed (the lock record changed, the data in
 * the new databases) and then could not delete the old ones hands over the
 * new session all the same (OldDataLeftError carries it), so the app goes
 * on with it instead of a closed one; the old databases stay marked and go
 * at the next start.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { afterEach, expect, it } from "vitest";
import { eraseEverything } from "../../demo/src/boot.js";
import { OldDataLeftError, Session } from "../../demo/src/session.js";
import { DATABASES, plainVault } from "../../demo/src/settings.js";
import type { PendingDeletesRow } from "../../demo/src/threads-db.js";
import { DemoDB } from "../../demo/src/threads-db.js";
import { existingDatabases, finishPendingDeletes } from "../../demo/src/vault-migration.js";

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
