/**
 * The code the Playwright helpers (`./playwright`) run inside a page: seed a
 * thread from an export, read a thread's latest state as plain data, clear
 * threads. It is bundled with everything it needs (saver, serializer,
 * importer) into one self-contained script, so the page under test does not
 * have to expose the library; `installPageApi()` puts the API on
 * `globalThis[PAGE_API_KEY]`.
 *
 * playwright/: this page code alone; the Node side is the `./playwright`
 * entry (src/playwright.ts). It imports portable/, saver/ and core/.
 * Not part of the package's public entry. @internal
 */
import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { isDeltaSnapshot, type CheckpointPendingWrite } from "@langchain/langgraph-checkpoint";
import { messagesDeltaReducer } from "@langchain/langgraph/web";
import { fromBase64, toBase64 } from "../core/bytes.js";
import { ThreadImportError, importThread, type IfThreadExists } from "../portable/index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { DatabaseBlockedError } from "../core/errors.js";

/** The global the page API lives under (versioned: a newer helper never uses an older script). */
export const PAGE_API_KEY = "__langgraphIndexedDBPlaywright_v1";

/** What {@link PageApi.seed} reports. */
export interface SeededThread {
  /** The thread written. */
  threadId: string;
  checkpoints: number;
  blobs: number;
  writes: number;
  /** The saver the file came from. */
  source: string;
}

/** A thread's latest checkpoint as JSON-able data. */
export interface PageThreadState {
  threadId: string;
  checkpointNs: string;
  checkpointId: string;
  parentCheckpointId?: string;
  /** The checkpoint's timestamp (ISO 8601). */
  createdAt: string;
  /**
   * Channel values: delta channels (`MessagesDeltaValue`) rebuilt from their
   * history, LangGraph's internal channels left out unless `internal: true`.
   * Messages become `{ type, content, id?, name?, tool_calls?, tool_call_id?, additional_kwargs? }`.
   */
  values: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /** Pending writes of the checkpoint: `[taskId, channel, value]`. */
  pendingWrites: [string, string, unknown][];
}

/** Options every page call takes. */
export interface PageDbOptions {
  /** The IndexedDBSaver database name. */
  dbName: string;
}

/** The functions installed in the page. */
export interface PageApi {
  seed(
    base64: string,
    options: PageDbOptions & { threadId?: string; ifExists?: IfThreadExists },
  ): Promise<SeededThread>;
  read(
    threadId: string,
    options: PageDbOptions & { checkpointNs?: string; internal?: boolean; deltaChannels?: string[] },
  ): Promise<PageThreadState | null>;
  clear(options: PageDbOptions & { threadIds?: string[]; deleteDatabase?: boolean }): Promise<string[]>;
}

/** Runs `work` with a saver on `dbName`, closed afterwards (so the app's upgrades and deletes are not blocked). */
/**
 * Refuses a database the page does not have, listing those it has: opening
 * it would create an empty one and answer "no thread", hiding a wrong
 * `dbName`. Where `indexedDB.databases()` is missing, nothing is checked.
 */
async function requireDatabase(helper: string, dbName: string): Promise<void> {
  if (typeof indexedDB.databases !== "function") return;
  const names = (await indexedDB.databases()).map((db) => db.name ?? "").filter(Boolean);
  if (names.includes(dbName)) return;
  throw new Error(
    `${helper}: this page's origin has no IndexedDB database "${dbName}"; it has ${names.length ? names.map((name) => JSON.stringify(name)).join(", ") : "none"}. Pass the dbName your app gives its IndexedDBSaver, e.g. { dbName: "${names[0] ?? "my-app"}" }.`,
  );
}

async function withSaver<T>(dbName: string, work: (saver: IndexedDBSaver) => Promise<T>): Promise<T> {
  const saver = new IndexedDBSaver({ dbName });
  try {
    return await work(saver);
  } finally {
    await saver.close();
  }
}

/** LangGraph's own channels: `__start__`, `__pregel_tasks`, `branch:to:x`, `join:…`. */
function isInternal(channel: string): boolean {
  return channel.startsWith("__") || channel.includes(":");
}

/** `[true, value]` for an `Overwrite` (class or wire shape). */
function overwriteOf(value: unknown): [boolean, unknown] {
  if (typeof value === "object" && value !== null) {
    if ("__overwrite__" in value) return [true, (value as Record<string, unknown>).__overwrite__];
    const record = value as { type?: unknown; value?: unknown; lg_name?: unknown };
    if ((record.type === "__overwrite__" || record.lg_name === "Overwrite") && "value" in record)
      return [true, record.value];
  }
  return [false, undefined];
}

/**
 * A delta channel's value from its seed and writes, as `DeltaChannel` does:
 * the last Overwrite resets the base; the rest go through the reducer, which
 * is LangGraph's messages reducer when the channel holds messages, else
 * concatenation.
 */
function replay(seed: unknown, writes: CheckpointPendingWrite[]): unknown {
  let base: unknown = isDeltaSnapshot(seed) ? (seed as { value: unknown }).value : seed;
  let values = writes.map((write) => write[2]);
  for (let i = values.length - 1; i >= 0; i--) {
    const [isOverwrite, value] = overwriteOf(values[i]);
    if (isOverwrite) {
      base = value ?? [];
      values = values.slice(i + 1);
      break;
    }
  }
  const current = Array.isArray(base) ? base : base === undefined || base === null ? [] : [base];
  if (values.length === 0) return current;
  const flat = values.flatMap((value) => (Array.isArray(value) ? value : [value]));
  if ([...current, ...flat].every((item) => isBaseMessage(item))) {
    return messagesDeltaReducer(current as BaseMessage[], values as BaseMessage[][]);
  }
  return [...current, ...flat];
}

/** A message's fields, plain. */
function messageData(message: BaseMessage): Record<string, unknown> {
  const data: Record<string, unknown> = { type: message.getType(), content: toData(message.content) };
  if (message.id !== undefined) data.id = message.id;
  if (message.name !== undefined) data.name = message.name;
  const extra = message as { tool_calls?: unknown[]; tool_call_id?: unknown };
  if (extra.tool_calls?.length) data.tool_calls = toData(extra.tool_calls);
  if (extra.tool_call_id !== undefined) data.tool_call_id = extra.tool_call_id;
  if (message.additional_kwargs && Object.keys(message.additional_kwargs).length > 0) {
    data.additional_kwargs = toData(message.additional_kwargs);
  }
  return data;
}

/** Any value as JSON-able data (undefined is dropped from objects, null in arrays). */
function toData(value: unknown, depth = 0): unknown {
  if (depth > 200) return "[too deep]";
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return value.toString();
  if (typeof value !== "object") return undefined;
  if (isBaseMessage(value)) return messageData(value);
  if (isDeltaSnapshot(value)) return toData((value as { value: unknown }).value, depth + 1);
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return { $bytes: toBase64(value) };
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (value instanceof Set) return [...value].map((item) => toData(item, depth + 1) ?? null);
  if (value instanceof Map) {
    const entries = [...value];
    return entries.every(([key]) => typeof key === "string")
      ? Object.fromEntries(entries.map(([key, item]) => [key, toData(item, depth + 1)]))
      : entries.map(([key, item]) => [toData(key, depth + 1), toData(item, depth + 1)]);
  }
  if (Array.isArray(value)) return value.map((item) => toData(item, depth + 1) ?? null);
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === "function") return toData(withJson.toJSON(), depth + 1);
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const data = toData(item, depth + 1);
    if (data !== undefined) out[key] = data;
  }
  return out;
}

/** The page API. */
export const pageApi: PageApi = {
  async seed(base64, options) {
    return withSaver(options.dbName, async (saver) => {
      const result = await importThread(saver, fromBase64(base64), {
        targetThreadId: options.threadId,
        ifExists: options.ifExists,
      }).catch((error: unknown) => {
        // importThread's hint names its own options; say it with seedThread's.
        if (error instanceof ThreadImportError && /already has checkpoints/.test(error.message)) {
          throw new ThreadImportError(
            `seedThread: thread "${error.threadId}" already has checkpoints in database "${options.dbName}". Pass { threadId: "…" } to seed it under another id, or { ifExists: "replace" } or { ifExists: "merge" }.`,
            { threadId: error.threadId, written: error.written, rolledBack: error.rolledBack, cause: error },
          );
        }
        throw error;
      });
      return {
        threadId: result.threadId,
        checkpoints: result.checkpoints,
        blobs: result.blobs,
        writes: result.writes,
        source: result.header.source,
      };
    });
  },

  async read(threadId, options) {
    await requireDatabase("readThreadState", options.dbName);
    return withSaver(options.dbName, async (saver) => {
      const tuple = await saver.getTuple({
        configurable: { thread_id: threadId, checkpoint_ns: options.checkpointNs ?? "" },
      });
      if (!tuple) return null;
      const values: Record<string, unknown> = { ...tuple.checkpoint.channel_values };
      const metadata = (tuple.metadata ?? {}) as Record<string, unknown>;
      const counters = Object.keys(
        (metadata.counters_since_delta_snapshot as Record<string, unknown> | undefined) ?? {},
      );
      const missing = Object.keys(tuple.checkpoint.channel_versions ?? {}).filter(
        (channel) => !Object.hasOwn(values, channel) && (options.internal || !isInternal(channel)),
      );
      if (missing.length > 0) {
        const history = await saver.getDeltaChannelHistory({ config: tuple.config, channels: missing });
        for (const channel of missing) {
          const entry = history[channel];
          if (!entry) continue;
          // A delta channel: named as one, counted as one by the loop, or seeded by a snapshot.
          const isDelta =
            options.deltaChannels?.includes(channel) || counters.includes(channel) || isDeltaSnapshot(entry.seed);
          if (isDelta) values[channel] = replay(entry.seed, entry.writes);
        }
      }
      for (const channel of Object.keys(values)) if (!options.internal && isInternal(channel)) delete values[channel];
      const { checkpoint_ns: checkpointNs = "", checkpoint_id: checkpointId } = tuple.config.configurable ?? {};
      const state: PageThreadState = {
        threadId,
        checkpointNs: String(checkpointNs),
        checkpointId: String(checkpointId),
        createdAt: tuple.checkpoint.ts,
        values: toData(values) as Record<string, unknown>,
        metadata: toData(metadata) as Record<string, unknown>,
        pendingWrites: (tuple.pendingWrites ?? []).map(([taskId, channel, value]) => [
          taskId,
          channel,
          toData(value) ?? null,
        ]),
      };
      const parent: unknown = tuple.parentConfig?.configurable?.checkpoint_id;
      if (typeof parent === "string") state.parentCheckpointId = parent;
      return state;
    });
  },

  async clear(options) {
    await requireDatabase("clearThreads", options.dbName);
    if (options.deleteDatabase) {
      await new Promise<void>((resolve, reject) => {
        const request = indexedDB.deleteDatabase(options.dbName);
        const timer = setTimeout(
          () =>
            reject(
              new DatabaseBlockedError(
                `clearThreads: deleting database "${options.dbName}" is blocked by an open connection that does not close on versionchange.`,
              ),
            ),
          10_000,
        );
        request.onsuccess = () => {
          clearTimeout(timer);
          resolve();
        };
        request.onerror = () => {
          clearTimeout(timer);
          reject(request.error);
        };
      });
      return [];
    }
    return withSaver(options.dbName, async (saver) => {
      let threadIds = options.threadIds;
      if (!threadIds) {
        threadIds = [];
        for await (const thread of saver.listThreads()) threadIds.push(thread.threadId);
      }
      for (const threadId of threadIds) await saver.deleteThread(threadId);
      return threadIds;
    });
  },
};

/** Puts {@link pageApi} on `globalThis[PAGE_API_KEY]`. */
export function installPageApi(): void {
  (globalThis as Record<string, unknown>)[PAGE_API_KEY] = pageApi;
}
