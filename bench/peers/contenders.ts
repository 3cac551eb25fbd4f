/**
 * The savers the peers suite compares, each opened on named storage, closed
 * and dropped the same way: ours, and the three peers (PGlite on idb://,
 * MemorySaver dumped to idb-keyval, sqlite-wasm on OPFS in a worker). Each
 * saver's code is imported when it is first opened, so that the cold-start
 * page (cold.ts) loads only the saver it measures, as an app would.
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

/** One saver of the comparison: how to open it on storage `name`, close it and delete that storage. */
export interface Contender {
  /** Short name, as cold.html's `?saver=` takes it. */
  key: string;
  name: string;
  open(name: string): Promise<BaseCheckpointSaver>;
  close(saver: BaseCheckpointSaver): Promise<void>;
  drop(name: string): Promise<void>;
  /** true, or why the long-chat figures (300 turns of seeding) leave it out. */
  longChats: true | string;
  /** At most this many rounds of a figure, for a saver whose calls take seconds. */
  rounds?: number;
}

const deleteDatabase = async (name: string) => (await import("../harness.js")).deleteDatabase(name);

const ours: Contender = {
  key: "ours",
  name: "ours",
  open: async (name) => new (await import("../../src/index.js")).IndexedDBSaver({ dbName: name }),
  close: (saver) => (saver as unknown as { close(): Promise<void> }).close(),
  drop: deleteDatabase,
  longChats: true,
};

/** The sqlite-wasm saver's close(drop). */
type Closing = { close(drop?: boolean): Promise<void> };

const sqlite: Contender = {
  key: "sqlite",
  name: "sqlite-wasm (OPFS, worker)",
  open: async (name) => (await import("./sqlite.js")).SqliteWasmSaver.open(`/${name}`),
  close: (saver) => (saver as unknown as Closing).close(),
  drop: async (name) => (await (await import("./sqlite.js")).SqliteWasmSaver.open(`/${name}`)).close(true),
  longChats: true,
};

const keyval: Contender = {
  key: "keyval",
  name: "MemorySaver + idb-keyval dump",
  open: async (name) => (await import("./idb-keyval.js")).KeyvalDumpSaver.open(name),
  close: (saver) => (saver as unknown as Closing).close(),
  drop: deleteDatabase,
  longChats: true,
};

const pglite: Contender = {
  key: "pglite",
  name: "PGlite saver (idb://, adapted)",
  open: async (name) => (await import("./pglite.js")).pgliteSaver(`idb://${name}`),
  close: (saver) => (saver as unknown as { end(): Promise<void> }).end(),
  // PGlite's IndexedDB file system keeps a database per data directory, named after it.
  drop: (name) => deleteDatabase(`/pglite/${name}`),
  // Its graph loop costs 10-70× ours per invoke (every query flushes its data directory to
  // IndexedDB), so 300 turns would take most of the run's time budget.
  longChats: "a turn costs 10-70× ours (see the graph loop); 300 turns exceed the run's time budget",
  // Its graph loops alone take about 20 s a round.
  rounds: 3,
};

/** Ours first, then the peers. */
export const CONTENDERS: Contender[] = [ours, sqlite, keyval, pglite];
