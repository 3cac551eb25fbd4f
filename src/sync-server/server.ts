/**
 * The sync server: a Fastify app in front of PostgreSQL. Stateless: every
 * request authenticates, runs one transaction and answers, so any number of
 * processes may serve the same database.
 *
 * This file wires the parts: http.ts (replies, errors, CORS), auth.ts (the
 * token, each user's rate), read-routes.ts (hello, threads, pull) and
 * write-routes.ts (push, key).
 */
/// <reference types="node" />
import type { Server } from "node:http";
import Fastify, { type FastifyHttpOptions, type FastifyInstance } from "fastify";
import pg from "pg";
import { DEFAULT_MAX_BODY_BYTES, SYNC_PATH, SYNC_PROTOCOL_VERSION } from "../sync/protocol.js";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { watchAnswers } from "./answers.js";
import { AppSpaces } from "./apps.js";
import { authenticator, limitUsers } from "./auth.js";
import { answerClientError, answerUnroutedEarly, installCors, installProtocol } from "./http.js";
import { addReadRoutes } from "./read-routes.js";
import { ReadinessProbe, addReadiness } from "./readiness.js";
import { addWriteRoutes } from "./write-routes.js";
import { SyncServerSaver } from "./saver.js";
import { setupTables } from "./schema.js";
import { ThreadOrderIndexBuild } from "./thread-order-index.js";
import { startDatabase } from "./startup.js";
import { surviveLostConnections } from "./sql.js";
import { PushNotifier } from "./notify.js";
import { OwnConnections, closeServer, refuseUnlessServing, trackInFlight } from "./shutdown.js";
import { DEFAULT_STORE_LIMITS, type StoreLimits } from "./store.js";
import { isStringList } from "../core/guards.js";

/** Options of {@link createSyncServer}. */
export interface SyncServerOptions {
  /** PostgreSQL connection string, e.g. `postgres://user:pass@127.0.0.1:5432/db`. */
  connectionString?: string;
  /** An existing pool to use instead (the server does not end it on close). */
  pool?: pg.Pool;
  /**
   * Maps a request's bearer token to its user id, or `undefined` to refuse
   * it (401). Called on every request; may be async (a database, a JWT check).
   * A user id is at most 1,024 bytes of UTF-8 and holds no U+001F (500 otherwise).
   */
  authenticate: (token: string) => string | undefined | Promise<string | undefined>;
  /** Largest request body accepted, in bytes (413 beyond). Default 16 MiB. */
  maxBodyBytes?: number;
  /** What one user may store and ask for; each limit has a default. */
  limits?: SyncServerLimits;
  /**
   * Most time a client may take to send a whole request, headers and body,
   * in milliseconds: past it the server answers 408 and closes the
   * connection (checked every quarter of it, at least every 30 s). A long
   * poll is not cut: its request arrives at once, only its answer waits.
   * An answer the client has not taken within the same time of its sending
   * has its connection cut too: until taken it is held in memory.
   * Default 60,000 (a device gives up on a request after 30 s).
   */
  requestTimeoutMs?: number;
  /** Pool size when the server makes its own pool. Default 10. */
  maxConnections?: number;
  /**
   * Behind a reverse proxy: which proxies to believe about the client's
   * address (`X-Forwarded-For`), as Fastify's `trustProxy`: true (every
   * hop: a client that reaches the server directly can then name any
   * address), or the proxies' addresses and CIDR ranges (better). The
   * per-address limit on bad tokens counts that address; without it, every
   * client behind the proxy counts as the proxy. Default false.
   */
  trustProxy?: boolean | string | string[];
  /**
   * Fastify's logger (JSON lines on stdout): `true` logs every request,
   * `"errors"` only what fails (a 500's error with its stack), `false`
   * nothing. Default false (the CLI's default is `"errors"`).
   */
  logger?: boolean | "errors";
  /**
   * Pages on other origins allowed to call the server from a browser (CORS),
   * e.g. `["https://app.example.com", "http://localhost:5173"]`, or `"*"`.
   * Default: none (same origin, or a reverse proxy in front).
   */
  corsOrigins?: readonly string[] | "*";
  /**
   * When PostgreSQL cannot be reached at start: `false` (the default)
   * rejects `createSyncServer` with the connection's error; `true` creates
   * the server anyway, which answers every request 503 (`unavailable`, with
   * Retry-After) and tries again (every 0.2 s at first, then every 2 s)
   * until the database answers, calling `onDatabaseWait` before each wait.
   * The CLI waits, so a server started before its database never exits.
   * Other failures (a wrong password, a missing permission) reject
   * `ready` instead: they cannot mend themselves.
   */
  waitForDatabase?: boolean;
  /** Told each time a start that waits for its database could not reach it, before it waits `retryInMs`. */
  onDatabaseWait?: (error: Error, retryInMs: number) => void;
}

/** Limits a deployer sets on each user. Every refusal is an error body whose message says the limit. */
export interface SyncServerLimits {
  /**
   * Largest a checkpoint may grow with its pending writes, in bytes, across
   * every push (413 `checkpoint_too_large`; the push is not applied). It
   * also bounds a pull's response, which sends a checkpoint whole. Default 16 MiB.
   */
  maxCheckpointBytes?: number;
  /**
   * Most bytes one user may store on the server (checkpoints, channel
   * values and pending writes as devices sent them, ciphertext for an
   * encrypted user, with their ids and channel versions; removal marks and
   * tombstones too): a push that would go over it is refused whole (413
   * `quota_exceeded`; devices show "server_full"), one that frees space
   * always goes through. Default 1 GiB.
   */
  maxUserBytes?: number;
  /**
   * Most apps (`app`, see docs/sync.md) with a space of their own one user
   * may write to (413 `too_many_apps`; devices show "server_full"): each is
   * a row and a key record the byte quota does not count. The app that
   * holds the user's own space is not one of them; reads of any app go on.
   * Default 100.
   */
  maxApps?: number;
  /** Most checkpoints one push may carry (413 `too_many_checkpoints`). Default 1,000 (devices send 64). */
  maxPushCheckpoints?: number;
  /**
   * Requests one user may make per minute to one server process, counted
   * after authentication and before the body is read (429 `rate_limited`,
   * with Retry-After). Default 1,200.
   */
  requestsPerMinute?: number;
  /**
   * Requests without a valid token (none, or one `authenticate` refuses),
   * or with a malformed `app`, one remote address may make per minute to one server process (429
   * `rate_limited`, with Retry-After, beyond): past it, `authenticate` is
   * not asked, so a flood of guessed tokens costs no lookup. A request
   * counts while `authenticate` runs and stops counting once it names a
   * user. Addresses are the socket's (see `trustProxy` behind a reverse
   * proxy: otherwise every client shares the proxy's). Default 60.
   */
  badTokensPerMinute?: number;
}

/** Default of {@link SyncServerOptions.requestTimeoutMs}. */
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** Default of {@link SyncServerLimits.badTokensPerMinute}. */
const DEFAULT_BAD_TOKENS_PER_MINUTE = 60;

/** Where to listen. */
export interface ListenOptions {
  /** TCP port; 0 picks a free one. Default 8787. */
  port?: number;
  /** Interface. Default `127.0.0.1`. */
  host?: string;
}

/** A running (or ready to run) sync server. */
export interface SyncServer {
  /** Starts listening; resolves with the base URL, e.g. `http://127.0.0.1:8787`. */
  listen(options?: ListenOptions): Promise<string>;
  /**
   * Stops listening, lets requests in flight finish (2 s at most), answers
   * those still running 503 `unavailable`, and ends its own pool: resolves
   * within about 3 s whatever the database does (one that stops answering
   * has every connection the server opened destroyed), leaving nothing that
   * keeps the process alive. A `pool` passed in is not ended. A failure of
   * that work (an `onClose` hook of `app`'s) is logged at error level, and
   * close() still resolves; called again, it returns the first call's promise.
   */
  close(): Promise<void>;
  /** The Fastify instance, for `inject` in tests or adding routes. */
  readonly app: FastifyInstance;
  /**
   * Resolves once the server's tables and its live-push listener are set up
   * (already, unless `waitForDatabase`); rejects if that failed for a reason
   * other than an unreachable database (then every request gets 500), or if
   * the server was closed first.
   */
  readonly ready: Promise<void>;
  /**
   * A checkpoint saver on `userId`'s synced threads, for a server-side agent
   * continuing a (plaintext) thread; devices pull its turns. See {@link SyncServerSaver}.
   */
  saverFor(userId: string, serde?: SerializerProtocol): SyncServerSaver;
}

/** The keys of {@link SyncServerLimits}. */
const LIMIT_NAMES: readonly string[] = [
  "maxCheckpointBytes",
  "maxUserBytes",
  "maxPushCheckpoints",
  "requestsPerMinute",
  "badTokensPerMinute",
  "maxApps",
] satisfies (keyof SyncServerLimits)[];

/** Throws a TypeError naming the first size or count option that is set but not a positive safe integer. */
function checkCounts(options: SyncServerOptions): void {
  const limits: Record<string, unknown> = { ...options.limits };
  const unknown = Object.keys(limits).filter((name) => !LIMIT_NAMES.includes(name));
  if (unknown.length > 0)
    throw new TypeError(
      `createSyncServer: unknown limit ${unknown.map((n) => `\`${n}\``).join(", ")}; the limits are ${LIMIT_NAMES.join(", ")}.`,
    );
  const counts: [string, unknown][] = [
    ["maxBodyBytes", options.maxBodyBytes],
    ["maxConnections", options.maxConnections],
    ["requestTimeoutMs", options.requestTimeoutMs],
    ...Object.keys(limits).map((name): [string, unknown] => [`limits.${name}`, limits[name]]),
  ];
  for (const [name, value] of counts) {
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) > 0))
      throw new TypeError(
        `createSyncServer: \`${name}\` must be a positive integer (got ${typeof value === "string" ? JSON.stringify(value) : String(value)}).`,
      );
  }
}

/**
 * The Fastify instance of `options`. A `trustProxy` naming something that is
 * not an address or range ("true" as a string, 10.0.0.0/40) is a TypeError
 * naming the option, instead of the proxy-address parser's bare message.
 */
function makeApp(options: FastifyHttpOptions<Server>): FastifyInstance {
  try {
    return Fastify(options);
  } catch (error) {
    if (typeof options.trustProxy !== "string" && !Array.isArray(options.trustProxy)) throw error;
    throw new TypeError(
      "createSyncServer: `trustProxy` must be true or the proxies' addresses and CIDR ranges " +
        `(e.g. ["10.0.0.2", "10.1.0.0/16"]), not ${JSON.stringify(options.trustProxy)}: ${(error as Error).message}.`,
      { cause: error },
    );
  }
}

/**
 * Creates the sync server and its tables (if absent). Node only.
 *
 * @example
 * ```ts
 * import { createSyncServer } from "langgraph-checkpoint-indexeddb/sync-server";
 * const tokens = new Map([["secret-token-of-ada", "ada"]]);
 * const server = await createSyncServer({
 *   connectionString: process.env.DATABASE_URL,
 *   authenticate: (token) => tokens.get(token),
 * });
 * console.log(await server.listen({ port: 8787 }));
 * ```
 */
export async function createSyncServer(options: SyncServerOptions): Promise<SyncServer> {
  if (typeof options.authenticate !== "function") {
    throw new TypeError(
      "createSyncServer: `authenticate` is required: a function from a bearer token to a user id (or undefined to refuse).",
    );
  }
  if (!options.pool && !options.connectionString) {
    throw new TypeError(
      'createSyncServer: pass `connectionString` (e.g. "postgres://user:pass@127.0.0.1:5432/db") or a `pool`.',
    );
  }
  // A limit that is not a number compares false: "1GB" as `maxUserBytes` would switch the quota off unseen.
  checkCounts(options);
  const cors: unknown = options.corsOrigins;
  if (cors !== undefined && cors !== "*" && !isStringList(cors))
    throw new TypeError(
      'createSyncServer: `corsOrigins` must be an array of origins (e.g. ["https://app.example.com"]) or "*".',
    );
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  // Made before any connection: Fastify refuses a trustProxy it cannot read only when it is made.
  const app = makeApp({
    logger: options.logger === "errors" ? { level: "error" } : (options.logger ?? false),
    bodyLimit: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    trustProxy: options.trustProxy ?? false,
    // Fastify's default (0) switches Node's bound off, so a body trickled a byte at a time held its
    // connection for ever. And Node checks a body against requestTimeout only while headersTimeout is no
    // longer (it swaps the two otherwise), so the server is made with both (headersTimeout follows
    // requestTimeout down from 60 s); Fastify then sets requestTimeout alone, to the same value.
    requestTimeout,
    // A request cut by Node (too slow, not HTTP) is answered in the protocol's error shape too.
    clientErrorHandler: answerClientError,
    // A request arriving during close() on a connection kept alive is answered by refuseUnlessServing, in the
    // protocol's shape: Fastify's own 503 body ({"error":"Service Unavailable",...}) no client could parse.
    return503OnClosing: false,
    http: {
      requestTimeout,
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.ceil(requestTimeout / 4))),
    },
  });
  const ownPool = !options.pool;
  const connections = new OwnConnections();
  const pool =
    options.pool ??
    new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      Client: connections.clientClass(),
    });
  // A connection's error (the database restarted) must not crash the process.
  surviveLostConnections(pool);
  const maxPushCheckpoints = options.limits?.maxPushCheckpoints ?? 1000;
  const storeLimits: StoreLimits = {
    maxCheckpointBytes: options.limits?.maxCheckpointBytes ?? DEFAULT_STORE_LIMITS.maxCheckpointBytes,
    maxUserBytes: options.limits?.maxUserBytes ?? DEFAULT_STORE_LIMITS.maxUserBytes,
    maxApps: options.limits?.maxApps ?? DEFAULT_STORE_LIMITS.maxApps,
  };

  const notifier = new PushNotifier(() => connections.client(pool.options));
  let buildIndex = false;
  let closing = false;
  let closed: Promise<void> | undefined;
  const startup = startDatabase(
    async () => {
      buildIndex = await setupTables(pool);
      await notifier.start();
    },
    options.waitForDatabase ? (options.onDatabaseWait ?? (() => undefined)) : undefined,
  );
  // On a database an older version created: built while the server serves (thread-order-index.ts).
  const indexBuild = new ThreadOrderIndexBuild(() => connections.client(pool.options));
  startup.ready.then(
    () => {
      if (buildIndex)
        indexBuild.run().catch((error: Error) => {
          if (!closing)
            app.log.error(
              { err: error },
              "The sync server could not build the index lgsync_checkpoints_thread_order: /threads answers " +
                "without it, slower, and the next start tries again.",
            );
        });
    },
    () => undefined,
  );
  if (options.waitForDatabase) {
    startup.ready.catch(() => undefined); // seen through `ready` and by every request
  } else {
    try {
      await startup.ready;
    } catch (error) {
      if (ownPool) await pool.end();
      throw error;
    }
  }

  const inFlight = trackInFlight(app);
  installProtocol(app);
  const admitRead = watchAnswers(app, requestTimeout);
  if (options.corsOrigins !== undefined) installCors(app, options.corsOrigins);

  // Until the database is set up, and once closing, every request is answered here (shutdown.ts).
  refuseUnlessServing(app, startup, () => closing, inFlight);

  answerUnroutedEarly(app);

  // Liveness (ok, the database down or not: a restart would not mend it), and readiness (readiness.ts),
  // added before limitUsers: never counted. Every other route needs a user (auth.ts), and counts.
  app.get(`${SYNC_PATH}/health`, async (_request, reply) => reply.send({ ok: true, v: SYNC_PROTOCOL_VERSION }));
  addReadiness(app, new ReadinessProbe(() => connections.client(pool.options)));

  const authenticated = authenticator(
    options.authenticate,
    new AppSpaces(pool),
    options.limits?.badTokensPerMinute ?? DEFAULT_BAD_TOKENS_PER_MINUTE,
  );
  await limitUsers(app, options.limits?.requestsPerMinute ?? 1200);
  addReadRoutes(app, { pool, authenticated, notifier, admitRead });
  addWriteRoutes(app, { pool, authenticated, storeLimits, maxPushCheckpoints });

  return {
    app,
    ready: startup.ready,
    saverFor: (userId, serde) => new SyncServerSaver(pool, userId, serde, storeLimits),
    async listen(listenOptions: ListenOptions = {}): Promise<string> {
      const address = await app.listen({ port: listenOptions.port ?? 8787, host: listenOptions.host ?? "127.0.0.1" });
      return address.replace("[::1]", "127.0.0.1");
    },
    close(): Promise<void> {
      // Once: a second call (SIGTERM while a failed setup closes the CLI's server) waits for the first.
      closed ??= (() => {
        closing = true;
        startup.stop();
        // Long polls answer now, so closing need not wait for them.
        return closeServer({
          app,
          inFlight,
          connections,
          first: [
            ["stop its index build", () => indexBuild.stop()],
            ["close its live-push listener", () => notifier.close()],
            ["close its HTTP server (Fastify's close and its onClose hooks)", () => app.close()],
          ],
          last: ownPool ? ["end its database pool", () => pool.end()] : undefined,
        });
      })();
      return closed;
    },
  };
}
