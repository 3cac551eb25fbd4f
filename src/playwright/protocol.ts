/**
 * What the Node side of `./playwright` and the script it injects into pages
 * share: the global the page API lives under and the shapes that cross
 * `page.evaluate`. Types and one constant only, so the Node side never loads
 * the page code.
 */
import type { IfThreadExists } from "../portable/index.js";

/**
 * The global the page API lives under. Versioned: a helper never uses a
 * script injected by another release with a different API.
 */
export const PAGE_API_KEY = "__langgraphIndexedDBPlaywright_v5";

/** A file the page holds for Node to fetch in pieces (transfer.ts). */
export interface StagedFile {
  /** Its name in the page. */
  id: string;
  /** Its length in bytes. */
  size: number;
}

/** What seeding a thread reports. */
export interface SeededThread {
  /** The thread written. */
  threadId: string;
  /** Checkpoints written. */
  checkpoints: number;
  /** Channel values written. */
  blobs: number;
  /** Pending writes written. */
  writes: number;
  /** The saver the file came from. */
  source: string;
}

/** A thread's latest checkpoint as JSON-able data. */
export interface PageThreadState {
  /** The thread. */
  threadId: string;
  /** Its namespace (`""`: the root graph). */
  checkpointNs: string;
  /** The latest checkpoint's id. */
  checkpointId: string;
  /** The checkpoint it follows. */
  parentCheckpointId?: string;
  /** The checkpoint's timestamp (ISO 8601). */
  createdAt: string;
  /**
   * Channel values: delta channels (`MessagesDeltaValue`) rebuilt from their
   * history, LangGraph's internal channels left out unless `internal: true`.
   * Messages become `{ type, content, id?, name?, tool_calls?, tool_call_id?, additional_kwargs? }`,
   * message-likes (`{ role: "user", content }`) in a delta channel too, as LangGraph coerces them.
   */
  values: Record<string, unknown>;
  /** The checkpoint's metadata (`source`, `step`, `run_id`, …). */
  metadata: Record<string, unknown>;
  /** Pending writes of the checkpoint: `[taskId, channel, value]`. */
  pendingWrites: [string, string, unknown][];
  /**
   * The nodes due to run next: those whose `branch:to:<node>` channel has a
   * version the node has not seen, and the target of each pending `Send` (once
   * per `Send`, as `graph.getState().next`), sorted. An interrupted run is paused before them.
   */
  next: string[];
  /** The interrupts pending on the checkpoint (`__interrupt__` writes): `{ value, id? }` each. */
  interrupts: { value: unknown; id?: string }[];
}

/** The app's `EncryptedSerializer` settings as JSON (see encryption.ts). */
export interface PageEncryption {
  passphrase?: string;
  salt?: { text: string } | { base64: string };
  iterations?: number;
  insecureTestOnlyWeakKdf?: boolean;
  /** The raw key's base64. */
  key?: string;
  context?: string;
  allowPlaintext?: boolean;
}

/** Options every page call takes. */
export interface PageDbOptions {
  /** The IndexedDBSaver database name. */
  dbName: string;
  /** The app's encryption; without it the saver's default serializer reads. */
  encryption?: PageEncryption;
  /**
   * How long an open that another connection blocks may wait (the saver's
   * `blockedTimeoutMs`, default 10 s): a wait or matcher gives what is left of its timeout.
   */
  blockedTimeoutMs?: number;
}

/** Options of reading a thread in the page. */
export interface PageReadOptions extends PageDbOptions {
  checkpointNs?: string;
  internal?: boolean;
  deltaChannels?: string[];
}

/** Whether a thread is busy, as the page sees it. */
export interface PageThreadActivity {
  /** A run holds the thread's lock (`isThreadRunning`). */
  running: boolean;
  /** The latest committed checkpoint's id, if any. */
  checkpointId?: string;
  /** The databases of the page's origin, when the one asked for is not among them (yet). */
  databases?: string[];
  /** That database was deleted by this page's clear (`deleteDatabase`), so its name is right. */
  deletedHere?: boolean;
}

/** What clearing a database reports. */
export interface PageClearResult {
  /** Threads deleted (empty when the database was deleted). */
  threadIds: string[];
  /** The wipe marker was removed with the database. */
  marker: boolean;
  /** OPFS journal files removed with the database. */
  journalFiles: number;
}

/** What restoring a snapshot reports. */
export interface PageRestoreResult {
  /** Threads written from the snapshot. */
  threadIds: string[];
  /** Threads the database had and the snapshot has not, deleted. */
  deleted: string[];
}

/** The functions the injected script installs in the page. */
export interface PageApi {
  /**
   * Writes one piece (base64) of a file of `size` bytes at `offset`, under `id`: files reach the
   * page in bounded pieces (transfer.ts), then a seed or restore names them by `id`.
   */
  stage(id: string, size: number, offset: number, base64: string): Promise<void>;
  /** Up to `length` bytes (base64) of a staged file from `offset`. */
  unstage(id: string, offset: number, length: number): Promise<string>;
  /** Frees staged files. */
  drop(ids: string[]): Promise<void>;
  /** Imports the staged file `staged` (and frees it). */
  seed(
    staged: string,
    options: PageDbOptions & { threadId?: string; ifExists?: IfThreadExists },
  ): Promise<SeededThread>;
  read(threadId: string, options: PageReadOptions): Promise<PageThreadState | null>;
  activity(threadId: string, options: PageDbOptions & { checkpointNs?: string }): Promise<PageThreadActivity>;
  /** Exports a thread into a staged file, for Node to fetch with `unstage`. */
  exportThread(threadId: string, options: PageDbOptions): Promise<StagedFile>;
  count(threadId: string, options: PageDbOptions & { checkpointNs?: string }): Promise<number>;
  threads(options: PageDbOptions): Promise<string[]>;
  clear(options: PageDbOptions & { threadIds?: string[]; deleteDatabase?: boolean }): Promise<PageClearResult>;
  /**
   * Makes the database hold exactly these threads (`[threadId, staged export]` each, freed after): every
   * file is validated with the app's serializer first, so a refused file changes nothing.
   */
  restore(files: [threadId: string, staged: string][], options: PageDbOptions): Promise<PageRestoreResult>;
  /** Opens the database as an app would (optionally with the OPFS journal) and says what recovery found. */
  recovery(options: PageDbOptions & { journal?: "opfs" }): Promise<{ kind: string; recoveredWrites: number }>;
}
