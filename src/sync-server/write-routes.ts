/**
 * The sync server's write routes: `POST /v1/push` and `PUT /v1/key`. Each
 * takes one of its user's places for a body before the body is read, and
 * one push of a user runs at a time (gate.ts).
 */
/// <reference types="node" />
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Pool } from "pg";
import { SYNC_PATH, SYNC_PROTOCOL_VERSION } from "../sync/protocol.js";
import { parseKeyRequest, parsePushRequest } from "../sync/protocol-checks.js";
import type { Authenticated } from "./auth.js";
import { InFlight, UserGate } from "./gate.js";
import { send } from "./http.js";
import { SyncHttpError, push, putKey, type StoreLimits } from "./store.js";

/** Requests with a body (push, key) one user may have in flight in one process (429 beyond). */
const MAX_BODIES_IN_FLIGHT = 4;

/** Largest body of `PUT /key`: a key record is a few hundred bytes. */
const KEY_BODY_BYTES = 64 * 1024;

/** What the write routes need from the server. */
export interface WriteRoutes {
  pool: Pool;
  authenticated: Authenticated;
  storeLimits: StoreLimits;
  /** Most checkpoints one push may carry. */
  maxPushCheckpoints: number;
}

/** Adds the write routes to `app`. */
export function addWriteRoutes(
  app: FastifyInstance,
  { pool, authenticated, storeLimits, maxPushCheckpoints }: WriteRoutes,
): void {
  // Each user's share of the pool (gate.ts): pushes one at a time (they take turns on the user's row
  // lock anyway); a user's work beyond that waits without a connection.
  const writes = new UserGate(1);
  // And a bound on the bodies a user has in memory: taken before the body is read, given back once the
  // handler is done with it (or, when the handler never ran, once the response ends).
  const bodies = new InFlight(MAX_BODIES_IN_FLIGHT);
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
          () => putKey(pool, request.space, keyRecord, storeLimits),
          request.bodySlot?.gone.signal,
        );
        return send(reply, { v: SYNC_PROTOCOL_VERSION, keyRecord: stored });
      }),
  );
}
