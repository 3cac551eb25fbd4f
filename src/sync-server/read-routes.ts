/**
 * The sync server's read routes: `GET /v1/hello`, `/v1/threads` and
 * `/v1/pull` (with its long poll). Each read of a user takes one of the
 * user's read turns (gate.ts).
 */
/// <reference types="node" />
import type { FastifyInstance, FastifyReply } from "fastify";
import type { Pool } from "pg";
import { MAX_PULL_LIMIT, MAX_PULL_WAIT_SECONDS, MAX_THREADS_PAGE, ProtocolError, SYNC_PATH } from "../sync/protocol.js";
import { deviceIdParam, threadIdParam } from "../sync/protocol-checks.js";
import { idDefect } from "../rows/ids.js";
import type { AdmitRead } from "./answers.js";
import type { Authenticated } from "./auth.js";
import { InFlight, UserGate } from "./gate.js";
import { intParam, send } from "./http.js";
import type { PushNotifier } from "./notify.js";
import { hello, pull, threads } from "./reads.js";

/**
 * Long polls (`wait`) of one user one process holds at once: each started
 * client keeps one, and each holds a connection (a file descriptor) for up
 * to {@link MAX_PULL_WAIT_SECONDS}.
 */
const MAX_POLLS_WAITING = 32;

/** What the read routes need from the server. */
export interface ReadRoutes {
  pool: Pool;
  authenticated: Authenticated;
  notifier: PushNotifier;
  /** Refuses a read while its user has too many answers untaken (answers.ts). */
  admitRead: AdmitRead;
}

/** Adds the read routes to `app`. */
export function addReadRoutes(app: FastifyInstance, { pool, authenticated, notifier, admitRead }: ReadRoutes): void {
  // Each user's share of the pool (gate.ts): reads two at a time; a user's reads beyond that wait without a connection.
  const reads = new UserGate(2);
  const polls = new InFlight(MAX_POLLS_WAITING);
  /** Runs a read of `reply`'s user in the user's read turn, once its untaken answers leave room for one more. */
  const readFor = <T>(reply: FastifyReply, work: () => Promise<T>): Promise<T> =>
    reads.run(reply.request.userId, async () => {
      admitRead(reply);
      return work();
    });

  app.get(`${SYNC_PATH}/hello`, { onRequest: authenticated }, async (request, reply) => {
    const answer = await readFor(reply, () => hello(pool, request.space, request.userId));
    const named = (request.query as Record<string, unknown>).app;
    return send(reply, typeof named === "string" ? { ...answer, app: named, unscoped: request.unscoped } : answer);
  });
  app.get(`${SYNC_PATH}/threads`, { onRequest: authenticated }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    // Either parameter asks for a page; neither, the whole list (clients that predate pages).
    const paged = query.limit !== undefined || query.after !== undefined;
    let page: { limit: number; after?: string } | undefined;
    if (paged) {
      const limit = intParam(query.limit, "limit", MAX_THREADS_PAGE, MAX_THREADS_PAGE);
      if (limit === 0)
        throw new ProtocolError(`Query parameter "limit" must be an integer from 1 to ${MAX_THREADS_PAGE}.`);
      page = { limit, after: query.after === undefined ? undefined : threadIdParam(query.after, "after") };
    }
    return send(reply, await readFor(reply, () => threads(pool, request.space, page)));
  });
  app.get(`${SYNC_PATH}/pull`, { onRequest: authenticated }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const since = intParam(query.since, "since", 0, Number.MAX_SAFE_INTEGER);
    const limit = Math.max(1, intParam(query.limit, "limit", 100, MAX_PULL_LIMIT));
    const waitSeconds = intParam(query.wait, "wait", 0, MAX_PULL_WAIT_SECONDS);
    const thread = query.thread;
    if (thread !== undefined && (typeof thread !== "string" || thread.length === 0 || idDefect(thread) !== undefined))
      throw new ProtocolError('Query parameter "thread" must be a thread id.');
    // The bound a push's device id has: before, 128 here and 1,024 there, and a device pushed but could not pull.
    const device = query.device === undefined ? undefined : deviceIdParam(query.device);
    const withRemoved = query.removed === "1";
    const read = () =>
      readFor(reply, () => pull(pool, request.space, since, limit, thread as string | undefined, device, withRemoved));
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
}
