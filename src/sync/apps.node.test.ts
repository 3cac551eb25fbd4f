/**
 * Two apps on one sync server with one user and token: each app's threads
 * stay in that app (its own space on the server), what the server held
 * before apps keeps syncing for the first app to name itself and for older
 * clients, and the byte quota counts every app of the user.
 */
import { describe, expect, it } from "vitest";
import { chat } from "../../test/support/chat-graph.js";
import { closeDevices, device, newUser, serverForFile } from "../../test/support/sync/harness.js";
import type { IndexedDBSaver } from "../saver/index.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { SyncClient } from "./client.js";
import { SYNC_MEDIA_TYPE, decodeBody } from "./protocol.js";

const served = serverForFile({ limits: { maxUserBytes: 100_000 } });

async function threadIds(saver: IndexedDBSaver): Promise<string[]> {
  const ids: string[] = [];
  for await (const thread of saver.listThreads()) ids.push(thread.threadId);
  return ids.sort();
}

async function hello(token: string, app?: string): Promise<Record<string, unknown>> {
  const query = app === undefined ? "" : `?app=${encodeURIComponent(app)}`;
  const response = await fetch(`${served.url}/v1/hello${query}`, {
    headers: { authorization: `Bearer ${token}`, accept: SYNC_MEDIA_TYPE },
  });
  expect(response.status).toBe(200);
  return decodeBody(new Uint8Array(await response.arrayBuffer())) as Record<string, unknown>;
}

describe("sync scoped per app", () => {
  it("two apps with one token keep their threads apart; devices of one app (its dbName) share them", async () => {
    const { token } = newUser();
    const chatA = device(served.url, token, { dbName: "chat" });
    const chatB = device(served.url, token, { dbName: "chat" });
    const notes = device(served.url, token, { dbName: "notes" });
    await chat(chatA.saver, "t-chat", ["hello from chat"]);
    await chat(notes.saver, "t-notes", ["hello from notes"]);
    await chat(notes.saver, "t-same", ["notes' own t-same"]);
    await chat(chatA.saver, "t-same", ["chat's own t-same"]);
    for (const d of [chatA, notes, chatB, chatA, notes]) await d.sync.syncNow();

    expect(await threadIds(chatB.saver)).toEqual(["t-chat", "t-same"]);
    expect(await threadIds(chatA.saver)).toEqual(["t-chat", "t-same"]);
    expect(await threadIds(notes.saver)).toEqual(["t-notes", "t-same"]);
    // One thread id in two apps is two threads: neither app's turns reach the other.
    expect(await chatB.saver.getTuple({ configurable: { thread_id: "t-same" } })).toMatchObject({
      checkpoint: { id: (await chatA.saver.getTuple({ configurable: { thread_id: "t-same" } }))?.checkpoint.id },
    });
    const notesHead = await notes.saver.getTuple({ configurable: { thread_id: "t-same" } });
    const chatHead = await chatA.saver.getTuple({ configurable: { thread_id: "t-same" } });
    expect(notesHead?.checkpoint.id).not.toBe(chatHead?.checkpoint.id);
    await closeDevices(chatA, chatB, notes);
  });

  it("what the server held before apps keeps syncing for the first app to name itself and for older clients", async () => {
    const { token } = newUser();
    // Clients that predate apps name none (app: null sends no `app`, as they do).
    const old = device(served.url, token, { client: { app: null } });
    await chat(old.saver, "t-before", ["written before apps"]);
    await old.sync.syncNow();
    expect(await hello(token)).not.toHaveProperty("app");

    // The same device upgraded: its app claims the user's own space, so its sync state goes on as before.
    const upgraded = new SyncClient({ saver: old.saver, url: served.url, token, app: "chat" });
    expect(await upgraded.syncNow()).toMatchObject({ pushed: 0, pulled: 0 });
    expect(await hello(token, "chat")).toMatchObject({ app: "chat", unscoped: true });
    const second = device(served.url, token, { dbName: "chat" });
    await second.sync.syncNow();
    expect(await threadIds(second.saver)).toEqual(["t-before"]);

    // Another app gets a space of its own, empty.
    const notes = device(served.url, token, { dbName: "notes" });
    await chat(notes.saver, "t-notes", ["notes"]);
    await notes.sync.syncNow();
    expect(await threadIds(notes.saver)).toEqual(["t-notes"]);
    expect(await hello(token, "notes")).toMatchObject({ app: "notes", unscoped: false, hasData: true });

    // An older client still shares the claiming app's threads, and not the other app's.
    await chat(second.saver, "t-after", ["written by the upgraded app"]);
    await second.sync.syncNow();
    const older = device(served.url, token, { client: { app: null } });
    await older.sync.syncNow();
    expect(await threadIds(older.saver)).toEqual(["t-after", "t-before"]);
    upgraded.close();
    await closeDevices(old, second, notes, older);
  });

  it("each app has its own key record: an encrypted app and a plain one under one user", async () => {
    const { token } = newUser();
    const plainApp = device(served.url, token, { dbName: "chat" });
    await chat(plainApp.saver, "t-plain", ["plain"]);
    await plainApp.sync.syncNow();
    const serde = await EncryptedSerializer.fromPassphrase("passphrase of the vault", {
      salt: "apps-test-salt-0001",
      iterations: 1000,
      insecureTestOnlyWeakKdf: true,
    });
    const vault = device(served.url, token, { dbName: "vault", serde });
    await chat(vault.saver, "t-sealed", ["sealed"]);
    await vault.sync.syncNow(); // sharing the plain app's space, it would be refused (plaintext_user)
    expect(await hello(token, "vault")).toMatchObject({ unscoped: false, keyRecord: expect.any(Uint8Array) });
    expect(await hello(token, "chat")).toMatchObject({ unscoped: true, keyRecord: null });
    await closeDevices(plainApp, vault);
  });

  it("the byte quota counts every app of the user", async () => {
    const { token } = newUser();
    const chatDevice = device(served.url, token, { dbName: "chat" });
    const notes = device(served.url, token, { dbName: "notes" });
    const words = (n: number) => Array.from({ length: n }, (_, i) => `turn ${i} ${"x".repeat(4_000)}`);
    await chat(chatDevice.saver, "big", words(2));
    await chatDevice.sync.syncNow();
    await chat(notes.saver, "big-too", words(2));
    await expect(notes.sync.syncNow()).rejects.toMatchObject({ code: "quota_exceeded" });
    // Alone, the same app is within the quota: it is the sum that is refused.
    const { token: fresh } = newUser();
    const alone = device(served.url, fresh, { dbName: "notes" });
    await chat(alone.saver, "big-too", words(2));
    await alone.sync.syncNow();
    await closeDevices(chatDevice, notes, alone);
  });

  it("refuses an app name it cannot keep exactly, on the device and on the server", async () => {
    const { token } = newUser();
    const d = device(served.url, token);
    expect(() => new SyncClient({ saver: d.saver, url: served.url, token, app: "a\u0000b" })).toThrow(/app.*control/);
    expect(() => new SyncClient({ saver: d.saver, url: served.url, token, app: "" })).toThrow(/1 to 128/);
    const response = await fetch(`${served.url}/v1/hello?app=${encodeURIComponent("x\u0001")}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: "bad_request", message: /app name/ } });
    await closeDevices(d);
  });
});
