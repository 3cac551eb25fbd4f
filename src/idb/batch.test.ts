import { afterEach, describe, expect, it } from "vitest";
import { unwrap, type DBSchema } from "idb";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { WriteBatcher } from "./batch.js";
import { Database } from "./database.js";
import { issue, putQuietly, storePut } from "./requests.js";
import { IndexedDBCheckpointError } from "../core/errors.js";

interface Schema extends DBSchema {
  a: { key: string; value: { id: string } };
  b: { key: string; value: { id: string } };
}

const opened: Database<Schema>[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) {
    await db.close();
    await deleteDatabase(db.name);
  }
});

function open(): Database<Schema> {
  const db = new Database<Schema>({
    name: freshDbName("batch"),
    upgrades: [
      (raw) => {
        raw.createObjectStore("a", { keyPath: "id" });
        raw.createObjectStore("b", { keyPath: "id" });
      },
    ],
  });
  opened.push(db);
  return db;
}

/** Counts the read-write transactions `db` opens while `run` runs. */
async function countWriteTransactions(db: Database<Schema>, run: () => Promise<unknown>): Promise<number> {
  const raw = await db.rawConnection();
  const original = raw.transaction.bind(raw);
  let count = 0;
  raw.transaction = ((stores: string | string[], mode?: IDBTransactionMode, options?: IDBTransactionOptions) => {
    if (mode === "readwrite") count += 1;
    return original(stores, mode, options);
  }) as typeof raw.transaction;
  try {
    await run();
  } finally {
    raw.transaction = original;
  }
  return count;
}

/** A few microtask hops, as a caller's serialization takes before it writes. */
async function hops(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

describe("WriteBatcher: a leading write waits one task for its follower", () => {
  it("shares one transaction with a write that comes some microtasks later", async () => {
    const db = open();
    const batcher = new WriteBatcher(db);
    await db.connection();
    const count = await countWriteTransactions(db, async () => {
      const first = batcher.write(["a"], (tx) => issue(storePut(tx.objectStore("a"), { id: "w" })), "lead", true, true);
      await hops(20);
      const second = batcher.write(["b"], (tx) => issue(storePut(tx.objectStore("b"), { id: "p" })), "follow");
      await Promise.all([first, second]);
    });
    expect(count).toBe(1);
    expect(
      await db.read(
        ["a", "b"],
        async (tx) => [await tx.objectStore("a").get("w"), await tx.objectStore("b").get("p")],
        "read",
      ),
    ).toEqual([{ id: "w" }, { id: "p" }]);
  });

  it("without the lead flag, the first write goes out alone (two transactions)", async () => {
    const db = open();
    const batcher = new WriteBatcher(db);
    await db.connection();
    const count = await countWriteTransactions(db, async () => {
      const first = batcher.write(["a"], (tx) => issue(storePut(tx.objectStore("a"), { id: "w" })), "alone");
      await hops(20);
      const second = batcher.write(["b"], (tx) => issue(storePut(tx.objectStore("b"), { id: "p" })), "follow");
      await Promise.all([first, second]);
    });
    expect(count).toBe(2);
  });

  it("a lone leading write still commits", async () => {
    const db = open();
    const batcher = new WriteBatcher(db);
    await batcher.write(["a"], (tx) => issue(storePut(tx.objectStore("a"), { id: "lone" })), "lead", true, true);
    expect(await db.read(["a"], (tx) => tx.objectStore("a").get("lone"), "read")).toEqual({ id: "lone" });
  });

  it("when the follower fails in the shared transaction, the leader is committed alone and the follower rejects", async () => {
    const db = open();
    const batcher = new WriteBatcher(db);
    const failure = new Error("refused");
    const lead = batcher.write(["a"], (tx) => issue(storePut(tx.objectStore("a"), { id: "kept" })), "lead", true, true);
    await hops(5);
    const follower = batcher.write(
      ["b"],
      (tx) => {
        issue(storePut(tx.objectStore("b"), { id: "dropped" }));
        throw failure;
      },
      "follow",
    );
    await expect(follower).rejects.toBe(failure);
    await lead;
    expect(
      await db.read(
        ["a", "b"],
        async (tx) => [await tx.objectStore("a").get("kept"), await tx.objectStore("b").get("dropped")],
        "read",
      ),
    ).toEqual([{ id: "kept" }, undefined]);
  });
});

describe("WriteBatcher: notes", () => {
  it("each write sees the notes of every write in its transaction (undefined for none), and only its own when run alone", async () => {
    const db = open();
    const batcher = new WriteBatcher<Schema, string>(db);
    const seen: (string | undefined)[][] = [];
    const lead = batcher.write(
      ["a"],
      (tx, notes) => {
        seen.push([...notes]);
        issue(storePut(tx.objectStore("a"), { id: "lead" }));
      },
      "lead",
      true,
      true,
    );
    await hops(5);
    const follower = batcher.write(["b"], (_tx, notes) => void seen.push([...notes]), "follow", true, false, "checks");
    await Promise.all([lead, follower]);
    expect(seen).toEqual([
      [undefined, "checks"],
      [undefined, "checks"],
    ]);
    seen.length = 0;
    await batcher.write(["a"], (_tx, notes) => void seen.push([...notes]), "alone", true, false, "mine");
    await batcher.write(["a"], (_tx, notes) => void seen.push([...notes]), "unnoted");
    expect(seen).toEqual([["mine"], [undefined]]);
  });
});

/**
 * `Database.write`'s outcome is its transaction's, read from the raw transaction's own `complete` and
 * `abort` (requests.ts `committed`), not from idb's wrapped transaction: a request error nobody prevents
 * aborts the write and rejects it, one its own handler prevents fails nothing.
 */
async function seeded(): Promise<Database<Schema>> {
  const db = open();
  await db.write(["a"], (tx) => putQuietly(tx.objectStore("a"), { id: "taken" }), "seed");
  return db;
}

/** The ids stored, read through a connection of its own. */
async function storedIds(name: string): Promise<string[]> {
  const other = new Database<Schema>({ name, upgrades: [() => undefined] });
  try {
    return (await other.read(["a"], (tx) => tx.objectStore("a").getAllKeys(), "read")).sort();
  } finally {
    await other.close();
  }
}

/** An insert of a taken key, with no promise: only the transaction hears of its failure. */
function addTaken(store: object, onError?: (event: Event) => void): void {
  const request = (unwrap(store as never) as unknown as IDBObjectStore).add({ id: "taken" });
  if (onError) request.onerror = onError;
}

describe("Database.write: the transaction's outcome", () => {
  it("a request's error nobody prevents aborts the write: it rejects, caused by that error, and nothing of it is stored", async () => {
    const db = await seeded();
    const write = db.write(
      ["a"],
      (tx) => {
        putQuietly(tx.objectStore("a"), { id: "rolled back" });
        addTaken(tx.objectStore("a"));
      },
      "write two rows",
    );
    const error = await write.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(IndexedDBCheckpointError);
    expect((error as Error).message).toContain("write two rows");
    expect(((error as Error).cause as DOMException).name).toBe("ConstraintError");
    expect(await storedIds(db.name)).toEqual(["taken"]);
  });

  it("a request's error its own handler prevents fails nothing: the write resolves, the rest committed", async () => {
    const db = await seeded();
    await db.write(
      ["a"],
      // The put awaited, so the commit is asked once the refusal is in: Chromium aborts a transaction
      // committed while an insert it then refuses is in flight (src/saver/put-writes.ts `settled`).
      async (tx) => {
        addTaken(tx.objectStore("a"), (event) => event.preventDefault());
        await tx.objectStore("a").put({ id: "kept" });
      },
      "write two rows",
    );
    expect(await storedIds(db.name)).toEqual(["kept", "taken"]);
  });
});
