/**
 * A thread moves from IndexedDBSaver to the official server savers and back:
 * `@langchain/langgraph-checkpoint-sqlite` (better-sqlite3) and
 * `@langchain/langgraph-checkpoint-postgres` on a real PostgreSQL server
 * (see test/support/postgres.ts). The thread has a subgraph, a dynamic `interrupt()`
 * resumed with a `Command`, `interruptBefore`, pending writes and a
 * `MessagesDeltaValue` channel. State and history must be equal on both
 * sides, the graph must continue on the far side (with IndexedDB's float
 * channel versions), and continue again after coming back.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { copyThreads, exportThread, importThread } from "../../src/portable/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { chat } from "../support/chat-graph.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { acquirePostgres } from "../support/postgres.js";
import { Scenario, fanOutGraph, rawThread, stateView } from "../support/portable-scenario.js";

// interrupt() reads its config from AsyncLocalStorage, which the /web entry does not install.
AsyncLocalStorageProviderSingleton.initializeGlobalInstance(new AsyncLocalStorage());

/** The part of node-postgres used here (the package ships no types of its own). */
interface Pool {
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

let postgres: { url: string; release(): Promise<void> } | undefined;
let pool: Pool | undefined;

beforeAll(async () => {
  postgres = await acquirePostgres();
  const pg = (await import("pg" as string)) as {
    default: { Pool: new (options: { connectionString: string; max: number }) => Pool };
  };
  pool = new pg.default.Pool({ connectionString: postgres.url, max: 4 });
}, 90_000);

afterAll(async () => {
  await pool?.end();
  await postgres?.release();
});

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An IndexedDBSaver (fake-indexeddb) on a fresh database. */
function idbSaver(): IndexedDBSaver {
  const saver = new IndexedDBSaver({ dbName: freshDbName("servers") });
  cleanups.push(async () => {
    await saver.close();
    await deleteDatabase(saver.dbName);
  });
  return saver;
}

/** The server savers, each on fresh storage. */
const servers: Record<string, () => Promise<BaseCheckpointSaver>> = {
  async sqlite() {
    const saver = SqliteSaver.fromConnString(":memory:");
    cleanups.push(async () => void (saver.db as { close(): void }).close());
    return saver;
  },
  async postgres() {
    // A schema per test: runs sharing one server (POSTGRES_URL) stay apart.
    const schema = `portable_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    const saver = new PostgresSaver(pool as never, undefined, { schema });
    await saver.setup();
    cleanups.push(async () => void (await pool!.query(`DROP SCHEMA "${schema}" CASCADE`)));
    return saver;
  },
};

/** The highest integer part among the latest root checkpoint's channel versions. */
async function maxCounter(saver: BaseCheckpointSaver, threadId: string): Promise<number> {
  const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
  return Math.max(...Object.values(tuple!.checkpoint.channel_versions).map((v) => Math.floor(Number(v))));
}

describe.each(Object.keys(servers))("IndexedDB → %s → IndexedDB", (name) => {
  it("moves a thread with a subgraph, interrupts, pending writes and MessagesDeltaValue, and continues on each side", async () => {
    const scenario = new Scenario(true);
    const browser = idbSaver();
    await scenario.untilInterrupted(browser, "t");
    const paused = await scenario.view(browser, "t");
    expect(paused.state.next).toEqual(["research"]);

    // There: every checkpoint, value and write arrives; state and history are equal.
    const server = await servers[name]!();
    const there = await importThread(server, await exportThread(browser, "t"));
    expect(there.header.source).toBe("IndexedDBSaver");
    expect(await rawThread(server, "t", { sortWrites: true })).toEqual(
      await rawThread(browser, "t", { sortWrites: true }),
    );
    expect(await scenario.view(server, "t")).toEqual(paused);

    // The run continues on the server (resume, approve, one more turn) as it would have in the browser.
    const before = await maxCounter(server, "t");
    await scenario.continueRun(server, "t");
    await scenario.continueRun(browser, "t");
    expect(await maxCounter(server, "t")).toBeGreaterThan(before);
    const serverShape = await scenario.shape(server, "t");
    expect(serverShape).toEqual(await scenario.shape(browser, "t"));
    const messages = (serverShape as { state: { values: { messages: { content: string }[] } } }).state.values.messages;
    expect(messages.map((m) => m.content).at(-1)).toBe("done: drafted, approved (yes); side 2, side 5, side 8");

    // And back: a fresh browser database gets the server's thread, equal, and continues it.
    const back = idbSaver();
    const home = await importThread(back, await exportThread(server, "t"));
    expect(home.header.source).toBe(name === "sqlite" ? "SqliteSaver" : "PostgresSaver");
    expect(await scenario.view(back, "t")).toEqual(await scenario.view(server, "t"));
    await scenario.ask(back, "t", "last");
    await scenario.ask(server, "t", "last");
    expect(await scenario.shape(back, "t")).toEqual(await scenario.shape(server, "t"));
    await scenario.approve(back, "t");
    await scenario.finish(back, "t");
    const final = (await scenario.view(back, "t")).state as {
      next: string[];
      values: { messages: { content: string }[] };
    };
    expect(final.next).toEqual([]);
    expect(final.values.messages).toHaveLength(12);
  }, 60_000);

  it("moves pending Sends there and back, and runs them", async () => {
    const browser = idbSaver();
    const config = { configurable: { thread_id: "fan" } };
    await fanOutGraph(browser).invoke({ topics: ["ducks", "owls"] }, config);
    const server = await servers[name]!();
    await importThread(server, await exportThread(browser, "fan"));
    expect(stateView(await fanOutGraph(server).getState(config))).toEqual(
      stateView(await fanOutGraph(browser).getState(config)),
    );
    const back = idbSaver();
    await importThread(back, await exportThread(server, "fan"));
    expect(await rawThread(back, "fan")).toEqual(await rawThread(browser, "fan"));
    for (const saver of [server, back]) {
      await fanOutGraph(saver).invoke(null, config);
      expect([...(await fanOutGraph(saver).getState(config)).values.results].sort()).toEqual([
        "notes on ducks",
        "notes on owls",
      ]);
    }
  }, 60_000);

  it("copies several threads both ways with copyThreads", async () => {
    const browser = idbSaver();
    await chat(browser, "a", ["one", "two"], true);
    await chat(browser, "b", ["three"], true);
    const server = await servers[name]!();
    await copyThreads(browser, server);
    const back = idbSaver();
    // The server savers have no listThreads: the threads are found through list({}).
    const copied = await copyThreads(server, back);
    expect(copied.threads.map((t) => t.threadId).sort()).toEqual(["a", "b"]);
    for (const id of ["a", "b"]) {
      expect(await rawThread(back, id, { sortWrites: true })).toEqual(
        await rawThread(browser, id, { sortWrites: true }),
      );
    }
    expect((await chat(back, "a", ["three"], true)).map(([, text]) => text)).toEqual([
      "one",
      "echo one (#1)",
      "two",
      "echo two (#3)",
      "three",
      "echo three (#5)",
    ]);
  }, 60_000);
});
