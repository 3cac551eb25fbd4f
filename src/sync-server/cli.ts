#!/usr/bin/env node
/**
 * `langgraph-sync-server` / `npm run sync-server`: runs the sync server from
 * environment variables.
 *
 * - `DATABASE_URL` (or `SYNC_DATABASE_URL`): PostgreSQL connection string. Required.
 * - `SYNC_TOKENS`: comma-separated `token=user` pairs, e.g. `t0k3n-ada=ada,t0k3n-bob=bob`;
 *   or `SYNC_TOKENS_FILE`: a JSON file `{ "<token>": "<user id>" }`. One is required.
 * - `PORT` (default 8787), `HOST` (default 127.0.0.1), `SYNC_MAX_BODY_BYTES`, `SYNC_REQUEST_TIMEOUT_MS`.
 * - `SYNC_CORS_ORIGINS`: comma-separated origins of pages allowed to call it from a browser, or `*`.
 * - Limits per user (see `SyncServerLimits`): `SYNC_MAX_USER_BYTES`, `SYNC_MAX_CHECKPOINT_BYTES`,
 *   `SYNC_MAX_PUSH_CHECKPOINTS`, `SYNC_MAX_APPS`, `SYNC_REQUESTS_PER_MINUTE`; per remote address, `SYNC_BAD_TOKENS_PER_MINUTE`.
 * - `SYNC_LOG`: `1` logs every request, `0` nothing; by default, what fails (500s, with the reason).
 * - `SYNC_TRUST_PROXY`: behind a reverse proxy, `1` (believe every hop's `X-Forwarded-For`) or
 *   comma-separated proxy addresses and CIDR ranges.
 *
 * Started before its database (a host booting, PostgreSQL restarting), the
 * server listens at once, answers 503 with Retry-After, and says on stderr
 * each time it could not reach the database; once it does it prints
 * "database ready". Only a failure that waiting cannot mend (a wrong
 * password, a missing permission) ends the process, with the reason.
 *
 * The server's own dependencies (fastify, pg, @fastify/rate-limit) are
 * optional peers of the package, which browser apps never need: the server
 * module is loaded only once they are known to be there, so a missing one is
 * a sentence saying what to install, not a stack.
 */
/// <reference types="node" />
import { tokenTable } from "./tokens.js";

/** What the server needs installed beside this package. */
const SERVER_PACKAGES = ["fastify", "pg", "@fastify/rate-limit"];

/** Loads the server module, or says which of its packages to install. */
async function loadServer(): Promise<typeof import("./server.js")> {
  try {
    return await import("./server.js");
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_MODULE_NOT_FOUND") throw error;
    const missing = SERVER_PACKAGES.filter((name) => String((error as Error).message).includes(`'${name}'`));
    throw new Error(
      `The sync server needs ${missing.length > 0 ? missing.join(" and ") : "its dependencies"} installed beside ` +
        `langgraph-checkpoint-indexeddb: npm install ${SERVER_PACKAGES.join(" ")}`,
      { cause: error },
    );
  }
}

/** An environment variable as a positive integer, or undefined when unset. */
function positive(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name];
  if (value === undefined || value === "") return undefined;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed <= 0)
    throw new Error(`${name} must be a positive integer, not "${value}".`);
  return parsed;
}

async function main(): Promise<void> {
  const env = process.env;
  const connectionString = env.DATABASE_URL ?? env.SYNC_DATABASE_URL;
  if (!connectionString)
    throw new Error(
      "Set DATABASE_URL to a PostgreSQL connection string, e.g. postgres://postgres@127.0.0.1:5432/postgres",
    );
  const table = tokenTable(env);
  if (table.size === 0)
    throw new Error(
      "Set SYNC_TOKENS=token=user[,token=user...] or SYNC_TOKENS_FILE=tokens.json: no request would be accepted otherwise.",
    );
  const { createSyncServer } = await loadServer();
  const server = await createSyncServer({
    connectionString,
    authenticate: (token) => table.get(token),
    maxBodyBytes: positive(env, "SYNC_MAX_BODY_BYTES"),
    requestTimeoutMs: positive(env, "SYNC_REQUEST_TIMEOUT_MS"),
    limits: {
      maxUserBytes: positive(env, "SYNC_MAX_USER_BYTES"),
      maxCheckpointBytes: positive(env, "SYNC_MAX_CHECKPOINT_BYTES"),
      maxPushCheckpoints: positive(env, "SYNC_MAX_PUSH_CHECKPOINTS"),
      maxApps: positive(env, "SYNC_MAX_APPS"),
      requestsPerMinute: positive(env, "SYNC_REQUESTS_PER_MINUTE"),
      badTokensPerMinute: positive(env, "SYNC_BAD_TOKENS_PER_MINUTE"),
    },
    trustProxy:
      env.SYNC_TRUST_PROXY === "1"
        ? true
        : env.SYNC_TRUST_PROXY?.split(",")
            .map((a) => a.trim())
            .filter(Boolean),
    // A request the server fails (500) is logged unless SYNC_LOG=0: the answer says nothing of why.
    logger: env.SYNC_LOG === "1" ? true : env.SYNC_LOG === "0" ? false : "errors",
    waitForDatabase: true,
    onDatabaseWait: (error, retryInMs) =>
      process.stderr.write(
        `langgraph sync server: cannot reach the database (${error.message || String((error as { code?: unknown }).code ?? error.name)}); trying again in ${retryInMs} ms\n`,
      ),
    corsOrigins:
      env.SYNC_CORS_ORIGINS === "*"
        ? "*"
        : env.SYNC_CORS_ORIGINS?.split(",")
            .map((o) => o.trim())
            .filter(Boolean),
  });
  const url = await server.listen({ port: env.PORT ? Number(env.PORT) : 8787, host: env.HOST ?? "127.0.0.1" });
  process.stdout.write(`langgraph sync server listening on ${url} (${table.size} token(s))\n`);
  let closing = false;
  server.ready.then(
    () => process.stdout.write("langgraph sync server: database ready\n"),
    (error: unknown) => {
      if (closing) return;
      process.stderr.write(
        `langgraph sync server: cannot set up the database: ${String((error as Error)?.message ?? error)}\n`,
      );
      void server.close().finally(() => process.exit(1));
    },
  );
  // close() ends within its bound whatever the database does (shutdown.ts), and leaves nothing open: the
  // process then ends by itself. Should something still hold it, it is ended, and says so.
  const stop = () => {
    closing = true;
    void server.close().then(() => {
      setTimeout(() => {
        process.stderr.write("langgraph sync server: closed, but something still held the process open; exiting\n");
        process.exit(0);
      }, 1000).unref();
    });
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
