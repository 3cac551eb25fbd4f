/**
 * The sync server: a Fastify app in front of PostgreSQL. Stateless: every
 * request authenticates, runs one transaction and answers, so any number of
 * processes may serve the same database.
 */
/// <reference types="node" />
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import pg from "pg";
import rateLimit from "@fastify/rate-limit";
import {
  DEFAULT_MAX_BODY_BYTES,
  MAX_PULL_LIMIT,
  MAX_PULL_WAIT_SECONDS,
  ProtocolError,
  SYNC_MEDIA_TYPE,
  SYNC_PATH,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  parseApp,
  parseKeyRequest,
  parsePushRequest,
  type ErrorBody,
} from "../sync/protocol.js";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { AppSpaces } from "./apps.js";
import { InFlight, UserGate } from "./gate.js";
import { SyncServerSaver } from "./saver.js";
import { setupSchema } from "./schema.js";
import { startDatabase } from "./startup.js";
import { PushNotifier } from "./notify.js";
import { hello, pull, threads } from "./reads.js";
import {
  DEFAULT_STORE_LIMITS,
  SyncHttpError,
  isConnectionLost,
  isUnstorable,
  push,
  putKey,
  type StoreLimits,
} from "./store.js";
import { idDefect } from "../rows/ids.js";

/** Options of {@link createSyncServer}. */
export interface SyncServerOptions {
  /** PostgreSQL connection string, e.g. `postgres://user:pass@127.0.0.1:5432/db`. */
  connectionString?: string;
  /** An existing pool to use instead (the server does not end it on close). */
  pool?: pg.Pool;
  /**
   * Maps a request's bearer token to its user id, or `undefined` to refuse
   * it (401). Called on every request; may be async (a database, a JWT check).
   */
  authenticate: (token: string) => string | undefined | Promise<string | undefined>;
  /** Largest request body accepted, in bytes (413 beyond). Default 16 MiB. */
  maxBodyBytes?: number;
  /** What one user may store and ask for; each limit has a default. */
  limits?: SyncServerLimits;
  /** Pool size when the server makes its own pool. Default 10. */
  maxConnections?: number;
  /** Log requests (Fastify's logger). Default false. */
  logger?: boolean;
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
   * Most bytes of values one user may store on the server (checkpoints,
   * channel values and pending writes as devices sent them, ciphertext for
   * an encrypted user): a push that would go over it is refused whole (413
   * `quota_exceeded`; devices show "server_full"), one that frees space
   * always goes through. Default 1 GiB.
   */
  maxUserBytes?: number;
  /** Most checkpoints one push may carry (413 `too_many_checkpoints`). Default 1,000 (devices send 64). */
  maxPushCheckpoints?: number;
  /**
   * Requests one user may make per minute to one server process, counted
   * after authentication and before the body is read (429 `rate_limited`,
   * with Retry-After). Default 1,200.
   */
  requestsPerMinute?: number;
}

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
  /** Stops listening, lets requests in flight finish (2 s at most), and ends its own pool. */
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

declare module "fastify" {
  interface FastifyRequest {
    /** The authenticated user. */
    userId: string;
    /** The space the request's app replicates in (see apps.ts): what its queries are scoped by. */
    space: string;
    /** Whether `space` is the user's own (requests naming no app share it). */
    unscoped: boolean;
    /** The place this request's body holds among its user's (see `InFlight`), once taken. */
    bodySlot: { leave: () => void; working: boolean; gone: AbortController } | undefined;
  }
}

/** Requests with a body (push, key) one user may have in flight in one process (429 beyond). */
const MAX_BODIES_IN_FLIGHT = 4;

/**
 * Long polls (`wait`) of one user one process holds at once: each started
 * client keeps one, and each holds a connection (a file descriptor) for up
 * to {@link MAX_PULL_WAIT_SECONDS}.
 */
const MAX_POLLS_WAITING = 32;

/** Largest body of `PUT /key`: a key record is a few hundred bytes. */
const KEY_BODY_BYTES = 64 * 1024;

/** A body as MessagePack. */
function send(reply: FastifyReply, body: unknown): FastifyReply {
  return reply.type(SYNC_MEDIA_TYPE).send(Buffer.from(encodeBody(body)));
}

/** The error body every failure carries. */
function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

/** A query parameter as a non-negative integer, or the default. */
function intParam(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const parsed = typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(parsed) || parsed > max)
    throw new ProtocolError(`Query parameter "${name}" must be an integer from 0 to ${max}.`);
  return parsed;
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
  const ownPool = !options.pool;
  const pool =
    options.pool ?? new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 10 });
  // An idle client's error (the database restarted) must not crash the process.
  pool.on("error", () => undefined);
  const maxPushCheckpoints = options.limits?.maxPushCheckpoints ?? 1000;
  const storeLimits: StoreLimits = {
    maxCheckpointBytes: options.limits?.maxCheckpointBytes ?? DEFAULT_STORE_LIMITS.maxCheckpointBytes,
    maxUserBytes: options.limits?.maxUserBytes ?? DEFAULT_STORE_LIMITS.maxUserBytes,
  };

  const notifier = new PushNotifier(() => new pg.Client(pool.options));
  const startup = startDatabase(
    async () => {
      await setupSchema(pool);
      await notifier.start();
    },
    options.waitForDatabase ? (options.onDatabaseWait ?? (() => undefined)) : undefined,
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

  const app = Fastify({ logger: options.logger ?? false, bodyLimit: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES });
  app.decorateRequest("userId", "");
  app.decorateRequest("space", "");
  app.decorateRequest("unscoped", true);
  app.decorateRequest("bodySlot", undefined);
  const spaces = new AppSpaces(pool);
  // Each user's share of the pool (gate.ts): pushes one at a time (they take turns on the user's row
  // lock anyway), reads two at a time; a user's work beyond that waits without a connection.
  const writes = new UserGate(1);
  const reads = new UserGate(2);
  // And a bound on the bodies a user has in memory: taken before the body is read, given back once the
  // handler is done with it (or, when the handler never ran, once the response ends).
  const bodies = new InFlight(MAX_BODIES_IN_FLIGHT);
  const polls = new InFlight(MAX_POLLS_WAITING);
  const admitBody = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const leave = bodies.enter(request.userId);
    if (!leave) {
      reply.header("retry-after", "1");
      throw new SyncHttpError(
        429,
        "rate_limited",
        `This server takes ${MAX_BODIES_IN_FLIGHT} requests with a body at once from one user; try again in a second.`,
      );
    }
    const slot = { leave, working: false, gone: new AbortController() };
    request.bodySlot = slot;
    reply.raw.once("close", () => {
      // Ended, or the client went away: a request still waiting for its turn leaves the queue unrun.
      if (!reply.raw.writableFinished) slot.gone.abort(new Error("The client went away."));
      if (!slot.working) leave();
    });
  };
  /** Runs a route's work on its body, then gives the body's place back. */
  const withBody = async <T>(request: FastifyRequest, work: () => Promise<T>): Promise<T> => {
    const slot = request.bodySlot;
    if (slot) slot.working = true;
    try {
      return await work();
    } finally {
      slot?.leave();
    }
  };
  // Bodies are MessagePack only: anything else gets 415 with the type to use.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(SYNC_MEDIA_TYPE, { parseAs: "buffer" }, (_request, body, done) => {
    try {
      done(null, decodeBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (error instanceof SyncHttpError) return reply.code(error.statusCode).send(errorBody(error.code, error.message));
    if (error instanceof ProtocolError) return reply.code(400).send(errorBody("bad_request", error.message));
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      const code = status === 413 ? "too_large" : status === 415 ? "unsupported_media_type" : "bad_request";
      const message = status === 415 ? `Send bodies as ${SYNC_MEDIA_TYPE}.` : error.message;
      return reply.code(status).send(errorBody(code, message));
    }
    if (isUnstorable(error)) {
      // The request's own data, not the server: a 400, so a device sends its threads one at a time
      // and skips the one refused, where a 500 stopped its whole round, every round.
      return reply
        .code(400)
        .send(
          errorBody(
            "bad_request",
            `The sync server's database cannot hold what this request carries (${error.message}); nothing of it was applied.`,
          ),
        );
    }
    if (isConnectionLost(error)) {
      return reply
        .code(503)
        .header("retry-after", "1")
        .send(errorBody("unavailable", "The sync server's database is unavailable; nothing was applied. Try again."));
    }
    request.log.error(error);
    return reply
      .code(500)
      .send(errorBody("internal", "The sync server failed to handle this request; it was not applied. Try again."));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody("not_found", `No route ${request.method} ${request.url}.`)),
  );

  const cors = options.corsOrigins;
  if (cors !== undefined) {
    // Browsers ask first (preflight) because of the Authorization header.
    app.addHook("onRequest", async (request, reply) => {
      const origin = request.headers.origin;
      if (typeof origin !== "string" || (cors !== "*" && !cors.includes(origin))) return;
      reply.header("access-control-allow-origin", cors === "*" ? "*" : origin).header("vary", "origin");
      if (request.method === "OPTIONS") {
        await reply
          .code(204)
          .header("access-control-allow-methods", "GET, POST, PUT")
          .header("access-control-allow-headers", "authorization, content-type, accept")
          .header("access-control-max-age", "600")
          .send();
      }
    });
  }

  // Until the database is set up, every request (health too: a balancer should look elsewhere) is
  // answered here, after CORS so a page can read the answer.
  app.addHook("onRequest", async (_request, reply) => {
    if (startup.state === "ready" || reply.sent) return undefined;
    if (startup.state === "failed")
      return reply
        .code(500)
        .send(errorBody("internal", "The sync server could not set up its database; its log says why."));
    return reply
      .code(503)
      .header("retry-after", "1")
      .send(
        errorBody("unavailable", "The sync server has not reached its database yet; nothing was applied. Try again."),
      );
  });

  app.get(`${SYNC_PATH}/health`, async (_request, reply) => reply.send({ ok: true, v: SYNC_PROTOCOL_VERSION }));

  // Every other route needs a user, known from the headers alone before a
  // byte of the body is read (onRequest runs before parsing): a stranger's
  // body costs the server nothing but the bytes it discards.
  const authenticated = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const header = request.headers.authorization;
    const match = typeof header === "string" ? /^Bearer (\S+)$/.exec(header) : null;
    const userId = match ? await options.authenticate(match[1]!) : undefined;
    if (typeof userId !== "string" || userId.length === 0) {
      // Returning the reply ends the request here: no parsing, no handler.
      return reply
        .code(401)
        .send(errorBody("unauthorized", "Missing or unknown token: send `Authorization: Bearer <token>`."));
    }
    request.userId = userId;
    const app = (request.query as Record<string, unknown>).app;
    const resolved = await spaces.resolve(userId, app === undefined ? undefined : parseApp(app));
    request.space = resolved.space;
    request.unscoped = resolved.unscoped;
    return undefined;
  };

  // Per user, after `authenticated` (onRequest) and before the body is read (preParsing).
  await app.register(rateLimit, {
    hook: "preParsing",
    max: options.limits?.requestsPerMinute ?? 1200,
    timeWindow: 60_000,
    keyGenerator: (request) => request.userId || request.ip,
    allowList: (request) => request.url.startsWith(`${SYNC_PATH}/health`),
    // Thrown, so the error handler answers it like every other refusal (Retry-After is already set).
    errorResponseBuilder: (_request, context) =>
      new SyncHttpError(
        429,
        "rate_limited",
        `Over this server's limit of ${context.max} requests a minute; try again in ${context.after}.`,
      ),
  });

  app.get(`${SYNC_PATH}/hello`, { onRequest: authenticated }, async (request, reply) => {
    const answer = await reads.run(request.userId, () => hello(pool, request.space, request.userId));
    const named = (request.query as Record<string, unknown>).app;
    return send(reply, typeof named === "string" ? { ...answer, app: named, unscoped: request.unscoped } : answer);
  });
  app.get(`${SYNC_PATH}/threads`, { onRequest: authenticated }, async (request, reply) =>
    send(reply, await reads.run(request.userId, () => threads(pool, request.space))),
  );
  app.get(`${SYNC_PATH}/pull`, { onRequest: authenticated }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const since = intParam(query.since, "since", 0, Number.MAX_SAFE_INTEGER);
    const limit = Math.max(1, intParam(query.limit, "limit", 100, MAX_PULL_LIMIT));
    const waitSeconds = intParam(query.wait, "wait", 0, MAX_PULL_WAIT_SECONDS);
    const thread = query.thread;
    if (thread !== undefined && (typeof thread !== "string" || thread.length === 0 || idDefect(thread) !== undefined))
      throw new ProtocolError('Query parameter "thread" must be a thread id.');
    const device = query.device;
    if (device !== undefined && (typeof device !== "string" || device.length === 0 || device.length > 128))
      throw new ProtocolError('Query parameter "device" must be a device id.');
    const withRemoved = query.removed === "1";
    const read = () =>
      reads.run(request.userId, () =>
        pull(
          pool,
          request.space,
          since,
          limit,
          thread as string | undefined,
          device as string | undefined,
          withRemoved,
        ),
      );
    // A long poll holds a connection: past its user's share it answers at once, as a server without
    // long polls does (the client backs off, and its interval rounds go on).
    const leave = waitSeconds === 0 ? undefined : polls.enter(request.userId);
    if (!leave) return send(reply, await read());
    try {
      // Taken before the first read, the wake-up cannot miss a push committed during it.
      const gone = new AbortController();
      request.raw.once("close", () => gone.abort());
      const woken = notifier.next(request.space, waitSeconds * 1000, gone.signal);
      const first = await read();
      if (first.cursor !== since) return send(reply, first);
      await woken;
      return send(reply, await read());
    } finally {
      leave();
    }
  });
  app.post(`${SYNC_PATH}/push`, { onRequest: authenticated, preParsing: admitBody }, (request, reply) =>
    withBody(request, async () => {
      const body = parsePushRequest(request.body);
      if (body.checkpoints.length > maxPushCheckpoints) {
        throw new SyncHttpError(
          413,
          "too_many_checkpoints",
          `A push may carry at most ${maxPushCheckpoints} checkpoints on this server; this one has ${body.checkpoints.length}. Send smaller batches.`,
        );
      }
      return send(
        reply,
        await writes.run(
          request.userId,
          () => push(pool, request.space, storeLimits, body),
          request.bodySlot?.gone.signal,
        ),
      );
    }),
  );
  app.put(
    `${SYNC_PATH}/key`,
    { onRequest: authenticated, preParsing: admitBody, bodyLimit: KEY_BODY_BYTES },
    (request, reply) =>
      withBody(request, async () => {
        const { keyRecord } = parseKeyRequest(request.body);
        const stored = await writes.run(
          request.userId,
          () => putKey(pool, request.space, keyRecord),
          request.bodySlot?.gone.signal,
        );
        return send(reply, { v: SYNC_PROTOCOL_VERSION, keyRecord: stored });
      }),
  );

  return {
    app,
    ready: startup.ready,
    saverFor: (userId, serde) => new SyncServerSaver(pool, userId, serde, storeLimits),
    async listen(listenOptions: ListenOptions = {}): Promise<string> {
      const address = await app.listen({ port: listenOptions.port ?? 8787, host: listenOptions.host ?? "127.0.0.1" });
      return address.replace("[::1]", "127.0.0.1");
    },
    async close(): Promise<void> {
      // Requests in flight get a grace period, then their connections are cut
      // (each push is one transaction: a cut one is either committed or not).
      const grace = setTimeout(() => app.server.closeAllConnections(), 2000);
      grace.unref();
      startup.stop();
      await notifier.close(); // long polls answer now, so closing need not wait for them
      await app.close();
      clearTimeout(grace);
      if (ownPool) await pool.end();
    },
  };
}
