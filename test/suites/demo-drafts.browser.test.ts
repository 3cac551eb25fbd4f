/**
 * The demo's drafts (demo/src/drafts.ts) in Chromium, in the tab's real
 * sessionStorage, sealed by real vaults: what was typed in an approval card
 * is never erased by a read that raced a lock change, came from a vault that
 * does not open it, or asked for another question (a read a newer one
 * overtook, or one made before the question was asked). Only an answer (or
 * typing for the new question) replaces it. A lock change seals again what
 * was typed last, and removes only what no vault of the app opens; the
 * tab's one draft an earlier version kept goes with it until a thread takes it.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { clearDrafts, createThreadDrafts, type CardEdits } from "../../demo/src/drafts.js";
import { EncryptedSerializer } from "../../demo/src/lib.js";
import { lockFor, plainVault, type Vault } from "../../demo/src/settings.js";

beforeEach(() => clearDrafts(sessionStorage));
afterEach(() => clearDrafts(sessionStorage));

/** A locked vault on a key derived cheaply (the app's own rounds take a second each). */
async function lockedVault(passphrase: string): Promise<Vault> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const serde = await EncryptedSerializer.fromPassphrase(passphrase, {
    salt,
    iterations: 1,
    insecureTestOnlyWeakKdf: true,
  });
  return (await lockFor(serde, salt)).vault;
}

/** `vault`, whose seals land only once `open()` is called: a slow seal, at a point the test picks. */
function gated(vault: Vault): { vault: Vault; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return {
    vault: { ...vault, seal: async (text, place) => (await gate, vault.seal(text, place)) },
    open,
  };
}

/** Every task queued so far has run: a read that goes on without waiting for a seal is done by then. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

const edit = (marker: string): CardEdits => ({ memories: [`my favourite river is the Rhône, ${marker}`], reason: "" });
const stored = () => JSON.stringify(sessionStorage);

it("a card's edits survive a read of the thread made while a lock seals them again", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  await drafts.cards.save(plainVault, "river", "q1", edit("marker-lock-race"));
  const locked = await lockedVault("a passphrase for the card");
  // The lock's new vault seals slowly; the app reads the open thread with that vault meanwhile (the
  // refresh after a lock), while the draft is still plain: the CI failure of e2e/approvals.
  const slow = gated(locked);
  const resealing = drafts.reseal(plainVault, slow.vault);
  const during = drafts.cards.load(locked, "river", "q1");
  await settled();
  slow.open();
  await resealing;
  // The read waited for the lock change: it reads the edits, as a reload after it will.
  expect(await during).toEqual(edit("marker-lock-race"));
  expect(await drafts.cards.load(locked, "river", "q1")).toEqual(edit("marker-lock-race"));
  expect(stored()).not.toContain("marker-lock-race");
});

it("a read for another question, or before the question is asked, shows nothing and leaves the edits", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  await drafts.cards.save(plainVault, "river", "q2", edit("marker-question"));
  // A read the run overtook (its snapshot still on the question before), one made as the run goes on and
  // its question is not asked yet, one of a legacy pause (no id): none is for these edits.
  expect(await drafts.cards.load(plainVault, "river", "q1")).toBeUndefined();
  expect(await drafts.cards.load(plainVault, "river", undefined)).toBeUndefined();
  expect(await drafts.cards.load(plainVault, "river", "q2")).toEqual(edit("marker-question"));
  // Answered: gone.
  drafts.cards.clear("river");
  expect(await drafts.cards.load(plainVault, "river", "q2")).toBeUndefined();
  expect(stored()).not.toContain("marker-question");
});

it("a read with a vault that does not open the edits (not the unlocked one yet) leaves them", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  const locked = await lockedVault("a passphrase for the card");
  await drafts.cards.save(locked, "river", "q1", edit("marker-vault"));
  expect(await drafts.cards.load(plainVault, "river", "q1")).toBeUndefined();
  expect(await drafts.cards.load(await lockedVault("another passphrase"), "river", "q1")).toBeUndefined();
  expect(await drafts.cards.load(locked, "river", "q1")).toEqual(edit("marker-vault"));
});

it("a lock change seals again what was typed last, even a save still being sealed when it began", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  const [before, after] = [await lockedVault("the passphrase before"), await lockedVault("the passphrase after")];
  await drafts.cards.save(before, "river", "q1", edit("typed first"));
  const slow = gated(before);
  const typed = drafts.cards.save(slow.vault, "river", "q1", edit("typed last"));
  const resealing = drafts.reseal(before, after);
  await settled();
  slow.open();
  await Promise.all([typed, resealing]);
  expect(await drafts.cards.load(after, "river", "q1")).toEqual(edit("typed last"));
});

it("a lock change removes only what no vault opens: a draft already sealed for the new vault stays", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  const [before, after] = [await lockedVault("the passphrase before"), await lockedVault("the passphrase after")];
  // Planted as plain text while the app is locked: neither vault opens it, and it must not stay plain.
  sessionStorage.setItem("langgraph-demo:approval:planted", JSON.stringify({ text: "marker-planted" }));
  const resealing = drafts.reseal(before, after);
  // Typed as the lock changed, for the new vault: the lock change reads it after it lands.
  const typed = drafts.cards.save(after, "river", "q1", edit("marker-new-vault"));
  await Promise.all([resealing, typed]);
  expect(sessionStorage.getItem("langgraph-demo:approval:planted")).toBeNull();
  expect(await drafts.cards.load(after, "river", "q1")).toEqual(edit("marker-new-vault"));
});

it("a lock change does not seal again an older text over one typed after it began (for the new vault)", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  const [before, after] = [await lockedVault("the passphrase before"), await lockedVault("the passphrase after")];
  const typed = (memory: string): CardEdits => ({ memories: [memory], reason: "" });
  await drafts.cards.save(before, "river", "q1", typed("typed first"));
  // A save still sealing for the old vault when the lock change begins...
  const slowOld = gated(before);
  const first = drafts.cards.save(slowOld.vault, "river", "q1", typed("typed second"));
  const resealing = drafts.reseal(before, after);
  await settled();
  // ...and one typed after it began, sealed for the new vault (the session changed first), landing last.
  const slowNew = gated(after);
  const last = drafts.cards.save(slowNew.vault, "river", "q1", typed("typed last"));
  slowOld.open();
  await new Promise((resolve) => setTimeout(resolve, 50));
  slowNew.open();
  await Promise.all([first, last, resealing]);
  expect(await drafts.cards.load(after, "river", "q1")).toEqual(typed("typed last"));
});

it("a lock change whose seal fails leaves no plain draft behind, and says so", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  await drafts.composer.save(plainVault, "river", "typed while unlocked");
  const locked = await lockedVault("the passphrase");
  const failing: Vault = { ...locked, seal: () => Promise.reject(new Error("no key to seal with")) };
  await expect(drafts.reseal(plainVault, failing)).rejects.toThrow("no key to seal with");
  expect(JSON.stringify(sessionStorage)).not.toContain("typed while unlocked");
});

/** The one draft of the tab an earlier version kept, plain (the app unlocked): a thread's once opened. */
const plantLegacy = (text: string) => sessionStorage.setItem("langgraph-demo:draft", JSON.stringify({ text }));

it("an earlier version's draft not moved to a thread yet goes with every lock change: the thread opened after reads it", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  plantLegacy("marker-legacy");
  const [first, second] = [await lockedVault("the first passphrase"), await lockedVault("the second passphrase")];
  // Locked: not left plain. The passphrase changed, then the lock removed: each time, the new vault opens it.
  await drafts.reseal(plainVault, first);
  expect(stored()).not.toContain("marker-legacy");
  await drafts.reseal(first, second);
  await drafts.reseal(second, plainVault);
  expect(await drafts.composer.load(plainVault, "river")).toBe("marker-legacy");
  expect(sessionStorage.getItem("langgraph-demo:draft")).toBeNull();
});

it("an earlier version's draft being moved to the thread as the lock changes is sealed for the new vault", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  plantLegacy("marker-moved");
  const locked = await lockedVault("the passphrase");
  // The tab opens its thread (the draft is read, then moved); the user locks before that is done.
  const loading = drafts.composer.load(plainVault, "river");
  const resealing = drafts.reseal(plainVault, locked);
  expect(await loading).toBe("marker-moved");
  await resealing;
  // Not left plain; a reload (a new tab's keepers) with the locked vault reads it.
  expect(stored()).not.toContain("marker-moved");
  expect(await createThreadDrafts(sessionStorage).composer.load(locked, "river")).toBe("marker-moved");
});

it("an earlier version's draft does not overwrite what was typed in the thread while it was moved", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  plantLegacy("marker-older");
  const loading = drafts.composer.load(plainVault, "river");
  await drafts.composer.save(plainVault, "river", "typed meanwhile");
  expect(await loading).toBe("typed meanwhile");
  expect(await createThreadDrafts(sessionStorage).composer.load(plainVault, "river")).toBe("typed meanwhile");
});

it("a thread's draft read as a lock change is queued behind it is the draft, not nothing", async () => {
  // Kept before the reload (this tab's keepers are new): the thread's draft and an earlier version's one.
  await createThreadDrafts(sessionStorage).composer.save(plainVault, "beta", "marker-beta");
  plantLegacy("marker-legacy-alpha");
  const drafts = createThreadDrafts(sessionStorage);
  const locked = await lockedVault("the passphrase");
  // The tab opens alpha (which takes the earlier version's draft), then beta, still unlocked; the lock
  // change hands over the locked vault before those reads are done: it seals beta's draft for that vault.
  const alpha = drafts.composer.load(plainVault, "alpha");
  const beta = drafts.composer.load(plainVault, "beta");
  const resealing = drafts.reseal(plainVault, locked);
  expect(await alpha).toBe("marker-legacy-alpha");
  expect(await beta).toBe("marker-beta");
  await resealing;
  expect(stored()).not.toContain("marker-beta");
  expect(await createThreadDrafts(sessionStorage).composer.load(locked, "beta")).toBe("marker-beta");
});

/** The keys of the drafts in the tab's storage. */
const draftsKept = () => Object.keys(sessionStorage).filter((key) => key.startsWith("langgraph-demo:"));

it("everything cleared while a lock change seals the drafts again stays cleared", async () => {
  const drafts = createThreadDrafts(sessionStorage);
  await drafts.composer.save(plainVault, "river", "marker-composer");
  await drafts.cards.save(plainVault, "river", "q1", edit("marker-card"));
  plantLegacy("marker-legacy");
  const locked = await lockedVault("the passphrase");
  // The new vault seals slowly: the drafts are read and opened, then all erased before their seals land.
  const slow = gated(locked);
  const resealing = drafts.reseal(plainVault, slow.vault);
  await settled();
  clearDrafts(sessionStorage);
  slow.open();
  await resealing;
  expect(draftsKept()).toEqual([]);
  // A save still being sealed when everything was cleared lands nothing either.
  const late = gated(locked);
  const saving = drafts.composer.save(late.vault, "river", "typed before the erase");
  clearDrafts(sessionStorage);
  late.open();
  await saving;
  expect(draftsKept()).toEqual([]);
});
