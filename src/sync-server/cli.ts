#!/usr/bin/env node
/**
 * `langgraph-sync-server` / `npm run sync-server`: runs the sync server from
 * environment variables.
 *
 * - `DATABASE_URL` (or `SYNC_DATABASE_URL`): PostgreSQL connection string. Required.
 * - `SYNC_TOKENS`: comma-separated `token=user` pairs, e.g. `t0k3n-ada=ada,t0k3n-bob=bob`;
 *   or `SYNC_TOKENS_FILE`: a JSON file `{ "<token>": "<user id>" }`. One is required.
 * - `PORT` (default 8787), `HOST` (default 127.0.0.1), `SYNC_MAX_BODY_BYTES`.
 * - `SYNC_CORS_ORIGINS`: comma-separated origins of pages allowed to call it from a browser, or `*`.
 */
/// <reference types="node" />
import { readFileSync } from "node:fs";
import { createSyncServer } from "./server.js";

/** Reads the token table from the environment. */
function tokens(env: NodeJS.ProcessEnv): Map<string, string> {
  const table = new Map<string, string>();
  if (env.SYNC_TOKENS_FILE) {
    const parsed = JSON.parse(readFileSync(env.SYNC_TOKENS_FILE, "utf8")) as Record<string, unknown>;
    for (const [token, user] of Object.entries(parsed)) if (typeof user === "string") table.set(token, user);
  }
  for (const pair of (env.SYNC_TOKENS ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at > 0) table.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
  return table;
}

async function main(): Promise<void> {
  const env = process.env;
  const connectionString = env.DATABASE_URL ?? env.SYNC_DATABASE_URL;
  if (!connectionString)
    throw new Error(
      "Set DATABASE_URL to a PostgreSQL connection string, e.g. postgres://postgres@127.0.0.1:5432/postgres",
    );
  const table = tokens(env);
  if (table.size === 0)
    throw new Error(
      "Set SYNC_TOKENS=token=user[,token=user...] or SYNC_TOKENS_FILE=tokens.json: no request would be accepted otherwise.",
    );
  const server = await createSyncServer({
    connectionString,
    authenticate: (token) => table.get(token),
    maxBodyBytes: env.SYNC_MAX_BODY_BYTES ? Number(env.SYNC_MAX_BODY_BYTES) : undefined,
    logger: env.SYNC_LOG === "1",
    corsOrigins:
      env.SYNC_CORS_ORIGINS === "*"
        ? "*"
        : env.SYNC_CORS_ORIGINS?.split(",")
            .map((o) => o.trim())
            .filter(Boolean),
  });
  const url = await server.listen({ port: env.PORT ? Number(env.PORT) : 8787, host: env.HOST ?? "127.0.0.1" });
  process.stdout.write(`langgraph sync server listening on ${url} (${table.size} token(s))\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
