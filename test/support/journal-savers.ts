/**
 * What the saver-level journal tests share (src/journal/journal.test.ts,
 * src/journal/other-tabs.test.ts): savers with the memory journal on
 * databases removed after each test, a graph that ticks, every row of a
 * database, and a database that lost its last transactions.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import { frameRecord, parseJournal } from "../../src/journal/format.js";
import {
  MemoryJournalBackend,
  resetMemoryJournals,
  type JournalOption,
  type RecoveryReport,
} from "../../src/journal/index.js";
import { replayFile } from "../../src/journal/raw.js";
import { IndexedDBSaver, type IndexedDBSaverParams } from "../../src/saver/index.js";
import { joinBytes } from "../../src/core/bytes.js";

/** The saver's journal options and methods (src/saver/types.ts, src/saver/index.ts). */
export type JournalParams = IndexedDBSaverParams & {
  journal?: JournalOption;
  onRecovery?: (report: RecoveryReport) => void;
  onWipe?: "report" | "throw";
};
export type JournaledSaver = IndexedDBSaver & { recovery(): Promise<RecoveryReport>; compactJournal(): Promise<void> };

export const STORES = ["checkpoints", "blobs", "writes", "threads", "meta"] as const;
let counter = 0;
const names: string[] = [];
export function dbName(): string {
  const name = `journal-test-${Date.now()}-${counter++}`;
  names.push(name);
  return name;
}

export function open(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}
export function deleteDb(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
}
export async function scan(name: string): Promise<Record<string, unknown[]>> {
  const db = await open(name);
  try {
    const tx = db.transaction([...STORES], "readonly");
    const rows = await Promise.all(
      STORES.map(
        (store) =>
          new Promise<unknown[]>((resolve, reject) => {
            const request = tx.objectStore(store).getAll();
            request.onsuccess = () => resolve(request.result);
            request.onerror = () => reject(request.error);
          }),
      ),
    );
    return Object.fromEntries(STORES.map((store, i) => [store, rows[i]!]));
  } finally {
    db.close();
  }
}

/** The ticking graph's state: a count and a log of its steps. */
export const State = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

/** A graph that ticks `steps` supersteps, logging each step once. */
export function tickGraph(saver: IndexedDBSaver, steps: number) {
  return new StateGraph(State)
    .addNode("tick", (state: typeof State.State) => ({ count: 1, log: [`step-${state.count + 1}`] }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (state: typeof State.State) => (state.count < steps ? "tick" : END))
    .compile({ checkpointer: saver });
}

export const config = (threadId: string): RunnableConfig => ({
  configurable: { thread_id: threadId },
  recursionLimit: 1000,
});

export function saver(name: string, params: JournalParams = {}, reports: RecoveryReport[] = []): JournaledSaver {
  const options: JournalParams = {
    dbName: name,
    journal: "memory",
    onRecovery: (report) => reports.push(report),
    ...params,
  };
  return new IndexedDBSaver(options) as JournaledSaver;
}

/**
 * A new database that lost the last `lost` transactions of the journal `file`
 * (its prefix, replayed), with that whole journal as its own (the header
 * renamed: a journal naming another database is not replayed). Its name.
 */
export async function losing(file: Uint8Array, lost: number): Promise<string> {
  const records = parseJournal(file).records;
  const name = dbName();
  const seed = saver(name, { journal: "off" });
  await seed.recovery();
  await seed.close();
  const db = await open(name);
  await replayFile(db, joinBytes(records.slice(0, records.length - lost).map((record) => frameRecord(record))));
  db.close();
  const own = [{ ...(records[0] as object), db: name }, ...records.slice(1)];
  MemoryJournalBackend.setFile(name, joinBytes(own.map((record) => frameRecord(record))));
  return name;
}

/**
 * A new database as the journal file `before` left it (replayed whole), with
 * the later journal file `after` as its own: a crash cost the database every
 * transaction between the two, the journal kept them. Its name.
 */
export async function lostSince(before: Uint8Array, after: Uint8Array): Promise<string> {
  const name = await losing(before, 0);
  const [header, ...body] = parseJournal(after).records;
  MemoryJournalBackend.setFile(
    name,
    joinBytes([{ ...(header as object), db: name }, ...body].map((record) => frameRecord(record))),
  );
  return name;
}

/** Removes the databases and memory journals of a test: call it in each file's `afterEach`. */
export async function removeJournalTestData(): Promise<void> {
  for (const name of names.splice(0)) await deleteDb(name).catch(() => undefined);
  resetMemoryJournals();
}
