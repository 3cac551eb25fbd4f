/**
 * The OPFS probe's worker: the cost of one `FileSystemSyncAccessHandle` call
 * of each kind, then a raw 2 KB insert and a read of the latest row in
 * sqlite-wasm (`opfs-sahpool`) under each journal setting. It answers with
 * lines of text.
 */
import sqlite3InitModule from "@sqlite.org/sqlite-wasm";

/** What the sync access handle offers that the probe times (lib.dom lacks the type in workers). */
interface SyncHandle {
  write(buffer: Uint8Array, options: { at: number }): number;
  read(buffer: Uint8Array, options: { at: number }): number;
  flush(): void;
  getSize(): number;
  truncate(size: number): void;
  close(): void;
}

/** ms per call of `fn` over `n` calls, as text. */
function per(label: string, n: number, fn: (i: number) => void): string {
  const start = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  return `${label}: ${((performance.now() - start) / n).toFixed(4)} ms`;
}

async function handleCalls(): Promise<string[]> {
  const root = await navigator.storage.getDirectory();
  const name = `probe-${Date.now()}`;
  const file = await root.getFileHandle(name, { create: true });
  const handle = (await (
    file as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }
  ).createSyncAccessHandle()) as SyncHandle;
  const page = new Uint8Array(4096).fill(3);
  const lines = [
    per("write 4 KB", 200, (i) => handle.write(page, { at: i * 4096 })),
    per("write 4 KB + flush", 50, (i) => (handle.write(page, { at: i * 4096 }), handle.flush())),
    per("read 4 KB", 200, (i) => handle.read(page, { at: i * 4096 })),
    per("getSize", 200, () => handle.getSize()),
    per("truncate", 50, (i) => handle.truncate(4096 * 300 + i)),
  ];
  handle.close();
  await root.removeEntry(name);
  return lines;
}

const SCHEMA = `CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))`;
const INSERT = "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)";
const LATEST =
  "SELECT * FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1";
const SETTINGS: [string, string[]][] = [
  ["default (rollback journal DELETE, synchronous FULL)", []],
  ["journal TRUNCATE", ["journal_mode=TRUNCATE"]],
  ["journal PERSIST", ["journal_mode=PERSIST"]],
  ["exclusive lock, journal DELETE", ["locking_mode=EXCLUSIVE"]],
  [
    "exclusive lock, WAL, synchronous FULL (the peer's)",
    ["locking_mode=EXCLUSIVE", "journal_mode=WAL", "synchronous=FULL"],
  ],
  ["exclusive lock, WAL, synchronous NORMAL", ["locking_mode=EXCLUSIVE", "journal_mode=WAL", "synchronous=NORMAL"]],
  ["synchronous OFF", ["synchronous=OFF"]],
];

async function sqliteSettings(): Promise<string[]> {
  const sqlite3 = await sqlite3InitModule();
  const blob = new Uint8Array(2048).fill(7);
  const lines: string[] = [];
  for (const [i, [label, pragmas]] of SETTINGS.entries()) {
    const pool = await sqlite3.installOpfsSAHPoolVfs({
      directory: `/opfs-probe-${Date.now()}-${i}`,
      name: `probe-${i}`,
    });
    const db = new pool.OpfsSAHPoolDb("/probe.sqlite3");
    for (const pragma of pragmas) db.exec(`PRAGMA ${pragma}`);
    db.exec(SCHEMA);
    const row = (n: number, prefix: string) => [
      "t",
      "",
      `${prefix}${String(n).padStart(4, "0")}`,
      null,
      "json",
      blob,
      blob,
    ];
    const each = per("insert, prepared per call", 60, (n) => db.exec({ sql: INSERT, bind: row(n, "a") }));
    const prepared = db.prepare(INSERT);
    const once = per("prepared once", 60, (n) => prepared.bind(row(n, "b")).stepReset());
    prepared.finalize();
    const read = per("read latest", 60, () => db.selectObjects(LATEST, ["t", ""]));
    lines.push(`${label}: ${each}; ${once}; ${read}`);
    db.close();
    await pool.removeVfs();
  }
  return lines;
}

self.onmessage = async () => {
  try {
    self.postMessage([...(await handleCalls()), ...(await sqliteSettings())].join("\n"));
  } catch (error) {
    self.postMessage(`error: ${String((error as Error)?.stack ?? error)}`);
  }
};
