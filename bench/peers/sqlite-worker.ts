/**
 * The worker of the sqlite-wasm peer: SQLite on OPFS with the two tables of
 * the official `@langchain/langgraph-checkpoint-sqlite` saver. The VFS is
 * `opfs-sahpool`, the one SQLite recommends for speed (the plain `opfs` VFS
 * measured 10-20× slower per put here: it relays every file operation to a
 * second worker). The page serializes; this worker only runs statements.
 */
import sqlite3InitModule, { type Database, type SAHPoolUtil } from "@sqlite.org/sqlite-wasm";
import type { SqliteReply, SqliteRequest, WriteRow } from "./sqlite-protocol.js";

// The official SqliteSaver's schema, as its setup() creates it.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS checkpoints (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  parent_checkpoint_id TEXT,
  type TEXT,
  checkpoint BLOB,
  metadata BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS writes (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  channel TEXT NOT NULL,
  type TEXT,
  value BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);`;

const CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata";
const WRITES_OF =
  "SELECT task_id, channel, type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_id, idx";

let db: Database | undefined;
let pool: SAHPoolUtil | undefined;

/** Opens the database file of the pool in OPFS directory `directory` (one pool per database). */
async function open(directory: string): Promise<string> {
  const sqlite3 = await sqlite3InitModule();
  pool = await sqlite3.installOpfsSAHPoolVfs({ directory, name: `sahpool-${directory.slice(1)}` });
  db = new pool.OpfsSAHPoolDb("/checkpoints.sqlite3");
  db.exec(SCHEMA);
  return sqlite3.version.libVersion;
}

function rowsWithWrites(sql: string, bind: (string | number)[]) {
  const rows = db!.selectObjects(sql, bind);
  return rows.map((row) => ({
    ...row,
    writes: db!.selectObjects(WRITES_OF, [
      row.thread_id as string,
      row.checkpoint_ns as string,
      row.checkpoint_id as string,
    ]),
  }));
}

function putWrites(rows: WriteRow[], replace: boolean): void {
  db!.transaction((tx) => {
    for (const row of rows)
      tx.exec({
        sql: `INSERT ${replace ? "OR REPLACE" : "OR IGNORE"} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        bind: row,
      });
  });
}

async function handle(request: SqliteRequest): Promise<unknown> {
  switch (request.op) {
    case "open":
      return await open(request.directory);
    case "put":
      db!.exec({
        sql: `INSERT OR REPLACE INTO checkpoints (${CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        bind: request.row,
      });
      return undefined;
    case "putWrites":
      return putWrites(request.rows, request.replace);
    case "get": {
      const { thread, ns, id } = request;
      return rowsWithWrites(
        `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ${id ? "AND checkpoint_id = ?" : "ORDER BY checkpoint_id DESC LIMIT 1"}`,
        id ? [thread, ns, id] : [thread, ns],
      )[0];
    }
    case "list": {
      const where = ["thread_id = ?"];
      const bind: (string | number)[] = [request.thread];
      for (const [clause, value] of [
        ["checkpoint_ns = ?", request.ns],
        ["checkpoint_id < ?", request.before],
      ] as const) {
        if (value === undefined) continue;
        where.push(clause);
        bind.push(value);
      }
      const limit = request.limit ? ` LIMIT ${request.limit}` : "";
      return rowsWithWrites(
        `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE ${where.join(" AND ")} ORDER BY checkpoint_id DESC${limit}`,
        bind,
      );
    }
    case "deleteThread":
      db!.transaction((tx) => {
        tx.exec({ sql: "DELETE FROM checkpoints WHERE thread_id = ?", bind: [request.thread] });
        tx.exec({ sql: "DELETE FROM writes WHERE thread_id = ?", bind: [request.thread] });
      });
      return undefined;
    case "close":
      db?.close();
      db = undefined;
      // The pool holds its files' access handles until released: a new worker on it would fail.
      if (request.drop) await pool?.removeVfs();
      else pool?.pauseVfs();
      return undefined;
  }
}

self.onmessage = async (event: MessageEvent<{ id: number; request: SqliteRequest }>) => {
  const { id, request } = event.data;
  let reply: SqliteReply;
  try {
    reply = { id, result: await handle(request) };
  } catch (error) {
    reply = { id, error: String((error as Error)?.message ?? error) };
  }
  self.postMessage(reply);
};
