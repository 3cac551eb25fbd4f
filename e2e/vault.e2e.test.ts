/**
 * The locked vault against someone who can write the browser profile's
 * files but has no passphrase (issue 11, items 8-10), each test written as
 * the attack: planted plain settings, a planted lock row, a sealed title
 * moved to another thread, the encrypted databases deleted, the lock
 * migration cut off between its steps; and the passphrase's minimum length.
 */
import type { Page } from "playwright";
import { beforeAll, expect, test } from "vitest";
import {
  editDemoDb,
  lockedVaultOf,
  plaintextHits,
  ready,
  send,
  transcript,
  unlockWith,
  paced,
  useHarness,
  type StorageState,
  PASSPHRASE,
} from "./support.js";

// Each test on empty storage, in the page the test before had (its renderer kept: e2e/support.ts, `cleanPage`).
const harness = useHarness({ cleanPage: true });

/**
 * The vault most attacks start from, made once by the app as a user makes
 * it: two threads ("alpha thread", then "beta thread", the one that opens),
 * locked with PASSPHRASE, at rest behind the lock screen. Each test that
 * starts from it gets its own copy of these bytes in a fresh context.
 */
let lockedVault: StorageState;
beforeAll(async () => {
  lockedVault = await lockedVaultOf(["alpha thread", "beta thread"], PASSPHRASE);
});

/**
 * A tab on a copy of {@link lockedVault}, at a document of the demo's origin that does not start the app (the
 * README page's stylesheet): an attack plants its rows there, then starts the app ({@link startApp}). The app's
 * lock screen, where they were planted before, was a boot (about 1.7 CPU-s) that only waited for the reload
 * that read them; the vault's copy shows that screen when the app starts (lockedVaultOf waits for it).
 */
async function vaultCopy(): Promise<Page> {
  return (await harness().restart(lockedVault)).page("readme.css");
}

/** Starts the app in `page`, at the fast pace, after a test planted its rows. */
async function startApp(page: Page): Promise<void> {
  await page.goto(paced(new URL(harness().baseURL), "fast"));
}

const databaseNames = (page: Page) => page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));

test("plain settings planted in a locked vault are refused and reported, never used", async () => {
  const page = await vaultCopy();

  // Another endpoint for every conversation, and another sync server, as plain rows.
  let stolen = 0;
  await page.route("**/evil/**", (route) => {
    stolen += 1;
    return route.abort();
  });
  const evil = new URL("evil/", harness().baseURL).href;
  await editDemoDb(
    page,
    "settings",
    `store.put({ key: "model", value: ${JSON.stringify(JSON.stringify({ provider: "openai", baseUrl: `${evil}v1`, model: "m", apiKey: "k" }))} });
     store.put({ key: "sync", value: ${JSON.stringify(JSON.stringify({ url: `${evil}sync`, token: "t" }))} });`,
  );
  await startApp(page);
  await unlockWith(page, PASSPHRASE);
  await ready(page);
  const notice = page.getByTestId("vault-problem");
  await notice.waitFor();
  expect(await notice.textContent()).toMatch(/model settings[\s\S]*sync settings/);

  await send(page, "another private question");
  expect(await transcript(page)).toHaveLength(4);
  await page.getByTestId("settings").click();
  expect(await page.locator('select[name="provider"]').inputValue()).toBe("local");
  expect(await page.getByTestId("sync-url").inputValue()).toBe("");
  expect(stolen).toBe(0);
});

test("a planted lock row is refused with any passphrase, and the data is left alone", async () => {
  const page = await harness().page();
  await ready(page);
  await send(page, "kept while attacked");
  const rows = [
    // A plain check value at a cheap round count: opened by any passphrase if trusted.
    `{ key: "lock", salt: crypto.getRandomValues(new Uint8Array(16)), iterations: 100000, check: "langgraph-demo:vault-check:v1" }`,
    `{ key: "lock", v: 2, salt: crypto.getRandomValues(new Uint8Array(16)), iterations: 1, check: "langgraph-demo:vault-check:v2" }`,
    `{ key: "lock", v: 2, salt: crypto.getRandomValues(new Uint8Array(16)), iterations: 600000, check: "langgraph-demo:vault-check:v2" }`,
  ];
  for (const row of rows) {
    await editDemoDb(page, "settings", `store.put(${row});`);
    await page.reload();
    await unlockWith(page, "any passphrase at all");
    await page.getByTestId("unlock-error").waitFor();
    expect(await page.getByTestId("unlock-error").textContent()).toContain("not written by this app");
    expect(await page.getByTestId("composer").count()).toBe(0);
  }
  // The plain data is still there once the planted row is gone.
  await editDemoDb(page, "settings", `store.delete("lock");`);
  await page.reload();
  await ready(page);
  await expect.poll(() => transcript(page)).toHaveLength(2);
});

test("a sealed title moved to another thread's row is refused", async () => {
  const page = await vaultCopy();
  // Both rows get alpha's sealed title (exactly its bytes).
  await editDemoDb(
    page,
    "threads",
    `const rows = await new Promise((resolve) => { const r = store.getAll(); r.onsuccess = () => resolve(r.result); });
     const titles = [];
     for (const row of rows) titles.push(row.title);
     const alpha = rows.find((row) => row.createdAt === Math.min(...rows.map((r) => r.createdAt)));
     for (const row of rows) store.put({ ...row, title: alpha.title });`,
  );
  await startApp(page);
  await unlockWith(page, PASSPHRASE);
  await ready(page);
  await expect
    .poll(() => page.getByTestId("thread").allTextContents())
    .toEqual(
      expect.arrayContaining([expect.stringContaining("alpha thread"), expect.stringContaining("(unreadable title)")]),
    );
  expect((await page.getByTestId("thread").allTextContents()).filter((t) => t.includes("alpha thread"))).toHaveLength(
    1,
  );
});

test("a lock whose encrypted databases are missing is reported, not replaced", async () => {
  const page = await vaultCopy();
  await page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const request = indexedDB.deleteDatabase("demo-checkpoints-locked");
        request.onsuccess = resolve;
        request.onerror = () => reject(request.error);
      }),
  );
  await startApp(page);
  await unlockWith(page, PASSPHRASE);
  await page.getByTestId("unlock-error").waitFor();
  expect(await page.getByTestId("unlock-error").textContent()).toContain("encrypted data is missing");
  expect(await page.getByTestId("composer").count()).toBe(0);
  expect(await databaseNames(page)).not.toContain("demo-checkpoints-locked");
});

test("a lock cut off after its lock record, before the plain databases are deleted, finishes on the next start", async () => {
  const marker = `pre-lock-${Math.random().toString(36).slice(2, 10)}`;
  const page = await harness().page();
  await ready(page);
  await send(page, `my note ${marker}`);
  expect((await plaintextHits(page, marker)).length).toBeGreaterThan(0);
  // The tab "dies" at the deletes: they never complete, as if it closed there.
  await page.evaluate(() => {
    const original = IDBFactory.prototype.deleteDatabase;
    IDBFactory.prototype.deleteDatabase = function (name: string) {
      if (name === "demo-checkpoints" || name === "demo-memory") return {} as IDBOpenDBRequest;
      return original.call(this, name);
    };
  });
  await page.getByTestId("settings").click();
  await page.getByTestId("passphrase").fill(PASSPHRASE);
  await page.getByTestId("passphrase-again").fill(PASSPHRASE);
  await page.getByTestId("lock").click();
  await expect
    .poll(
      () =>
        editDemoDb(
          page,
          "settings",
          `return await new Promise((resolve) => { const r = store.get("lock"); r.onsuccess = () => resolve(r.result !== undefined); });`,
        ),
      { timeout: 30_000 },
    )
    .toBe(true);
  await page.close();

  const next = await harness().page();
  await next.getByTestId("unlock-passphrase").waitFor();
  await expect.poll(() => databaseNames(next)).not.toContain("demo-checkpoints");
  expect(await databaseNames(next)).not.toContain("demo-memory");
  expect(await plaintextHits(next, marker)).toEqual([]);
  await unlockWith(next, PASSPHRASE);
  await ready(next);
  await expect.poll(() => transcript(next)).toContain(`user: my note ${marker}`);
});

test("locking needs a passphrase of 10 characters; unlocked, the API key field says it is not encrypted", async () => {
  const page = await harness().page();
  await ready(page);
  await page.getByTestId("settings").click();
  await page.locator('select[name="provider"]').selectOption("openai");
  await expect.poll(() => page.locator(".remote-fields").textContent()).toContain("Not encrypted");

  await page.getByTestId("passphrase").fill("nine char");
  await page.getByTestId("passphrase-again").fill("nine char");
  await page.getByTestId("lock").click();
  const refused = page.getByText("Could not lock: Use a passphrase of at least 10 characters.");
  await refused.waitFor();
  // Said as a failure, in the colour of errors (it was the grey of "Encrypting…"), which is not that grey.
  const inDangerColour = (el: Element) => {
    const colour = (value: string) => {
      const probe = document.createElement("span");
      probe.style.color = value;
      el.append(probe);
      const computed = getComputedStyle(probe).color;
      probe.remove();
      return computed;
    };
    return colour("var(--danger)") !== colour("var(--muted)") && getComputedStyle(el).color === colour("var(--danger)");
  };
  expect(await refused.evaluate(inDangerColour)).toBe(true);
  expect(await page.getByTestId("new-passphrase").count()).toBe(0);
  expect(
    await editDemoDb(
      page,
      "settings",
      `return await new Promise((resolve) => { const r = store.get("lock"); r.onsuccess = () => resolve(r.result); });`,
    ),
  ).toBeUndefined();

  await page.getByTestId("passphrase").fill("ten chars!");
  await page.getByTestId("passphrase-again").fill("ten chars!");
  await page.getByTestId("lock").click();
  await page.getByTestId("new-passphrase").waitFor({ timeout: 30_000 });
  await page.locator('select[name="provider"]').selectOption("openai");
  expect(await page.locator(".remote-fields").textContent()).toContain("encrypted with your passphrase");
  await page.getByTestId("current-passphrase").fill("ten chars!");
  await page.getByTestId("new-passphrase").fill("too short");
  await page.getByTestId("new-passphrase-again").fill("too short");
  await page.getByTestId("change-passphrase").click();
  await page.getByText(/at least 10 characters/).waitFor();
});

test("a vault locked before texts were bound to their place (a v1 lock row) is upgraded by the passphrase, not refused", async () => {
  const page = await vaultCopy();
  // Rewrites the vault as the first format wrote it: lock row without `v`,
  // texts sealed with the key but not bound to their place.
  await page.evaluate(`(async () => {
    const { EncryptedSerializer } = await import("/e2e/internals.js");
    const db = await new Promise((resolve, reject) => {
      const request = indexedDB.open("langgraph-demo");
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const done = (tx) => new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); });
    const get = (request) => new Promise((resolve) => { request.onsuccess = () => resolve(request.result); });
    let tx = db.transaction(["settings", "threads"], "readonly");
    const lock = await get(tx.objectStore("settings").get("lock"));
    const threads = await get(tx.objectStore("threads").getAll());
    await done(tx);
    const serde = await EncryptedSerializer.fromPassphrase(${JSON.stringify(PASSPHRASE)}, { salt: lock.salt, iterations: 600000 });
    const seal = async (text) => { const [type, data] = await serde.dumpsTyped(text); return { type, data }; };
    const check = await seal("langgraph-demo:vault-check:v1");
    const titles = await Promise.all(threads.map(() => seal("the v1 title")));
    const model = await seal(JSON.stringify({ provider: "local", baseUrl: "https://api.openai.com/v1", model: "v1-model", apiKey: "" }));
    tx = db.transaction(["settings", "threads"], "readwrite");
    tx.objectStore("settings").put({ key: "lock", salt: lock.salt, iterations: 600000, check });
    tx.objectStore("settings").put({ key: "model", value: model });
    // The first format had no sync settings.
    tx.objectStore("settings").delete("sync");
    threads.forEach((thread, i) => tx.objectStore("threads").put({ ...thread, title: titles[i] }));
    await done(tx);
    db.close();
  })()`);
  const lockRow = () =>
    page.evaluate(async () => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const request = indexedDB.open("langgraph-demo");
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
      const row = await new Promise<{ v?: number } | undefined>((resolve) => {
        const request = db.transaction("settings").objectStore("settings").get("lock");
        request.onsuccess = () => resolve(request.result as { v?: number } | undefined);
      });
      db.close();
      return row;
    });
  expect((await lockRow())?.v).toBeUndefined();

  await startApp(page);
  const unlockTop = () => page.getByTestId("unlock").evaluate((button) => button.getBoundingClientRect().top);
  const top = await unlockTop();
  await unlockWith(page, "not the passphrase at all");
  await page.getByTestId("unlock-error").waitFor();
  expect(await page.getByTestId("unlock-error").textContent()).toContain("not right");
  // The message grows the card downwards: the field and the button stay put (a centred card moved them up 11 px).
  expect(await unlockTop()).toBe(top);
  expect((await lockRow())?.v).toBeUndefined();

  await unlockWith(page, PASSPHRASE);
  await ready(page);
  await expect.poll(() => transcript(page)).toHaveLength(2);
  expect((await transcript(page))[0]).toBe("user: beta thread");
  await expect.poll(() => page.locator(".thread-title").allTextContents()).toContain("the v1 title");
  expect(await page.getByTestId("vault-problem").allTextContents()).toEqual([]);
  expect((await lockRow())?.v).toBe(2);

  // From now on it is an ordinary vault: the upgraded texts open bound to their place.
  await page.reload();
  await unlockWith(page, PASSPHRASE);
  await ready(page);
  await expect.poll(() => page.locator(".thread-title").allTextContents()).toContain("the v1 title");
  // The model settings were re-sealed too: a row that did not open bound would be reported here.
  expect(await page.getByTestId("vault-problem").count()).toBe(0);
});

test("a deleted lock row opens nothing: the app refuses and explains instead of booting unlocked", async () => {
  const page = await vaultCopy();
  await editDemoDb(page, "settings", `store.delete("lock");`);
  await startApp(page);
  await page.getByTestId("missing-lock").waitFor();
  expect(await page.getByTestId("missing-lock").textContent()).toContain("lock record");
  expect(await page.getByTestId("composer").count()).toBe(0);
  // No plain database was made beside the encrypted ones, which are left alone.
  const names = await databaseNames(page);
  expect(names).not.toContain("demo-checkpoints");
  expect(names).toContain("demo-checkpoints-locked");
  // The explicit reset starts afresh.
  await page.getByTestId("erase").click();
  await page.getByTestId("confirm-erase").click();
  await ready(page);
  expect(await databaseNames(page)).not.toContain("demo-checkpoints-locked");
});

test("a lock cut off while copying leaves no encrypted copy behind: the next start opens the plain data", async () => {
  const page = await harness().page();
  await ready(page);
  await send(page, "kept plain");
  // The tab "dies" before the lock record is written: that write never happens.
  await page.evaluate(() => {
    const put = IDBObjectStore.prototype.put;
    IDBObjectStore.prototype.put = function (value: unknown, key?: IDBValidKey) {
      if ((value as { key?: unknown } | null)?.key === "lock") throw new DOMException("tab closed", "AbortError");
      return put.call(this, value, key);
    };
  });
  await page.getByTestId("settings").click();
  await page.getByTestId("passphrase").fill(PASSPHRASE);
  await page.getByTestId("passphrase-again").fill(PASSPHRASE);
  await page.getByTestId("lock").click();
  await expect.poll(() => databaseNames(page), { timeout: 30_000 }).toContain("demo-checkpoints-locked");
  await page.close();
  const next = await harness().page();
  await ready(next);
  await expect.poll(() => transcript(next)).toContain("user: kept plain");
  await expect.poll(() => databaseNames(next)).not.toContain("demo-checkpoints-locked");
});
