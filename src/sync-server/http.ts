/**
 * What every route of the sync server shares: the request's fields set by
 * authentication, MessagePack replies, error bodies, query parameters, and
 * the handlers that turn any failure into the protocol's error body.
 */
/// <reference types="node" />
import type { Socket } from "node:net";
import type { FastifyInstance, FastifyReply } from "fastify";
import { ProtocolError, SYNC_MEDIA_TYPE, decodeBody, encodeBody, type ErrorBody } from "../sync/protocol.js";
import { SyncHttpError } from "./store.js";
import { isConnectionLost, isUnstorable } from "./sql.js";

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

/** A body as MessagePack. */
export function send(reply: FastifyReply, body: unknown): FastifyReply {
  return reply.type(SYNC_MEDIA_TYPE).send(Buffer.from(encodeBody(body)));
}

/** The error body every failure carries. */
export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

/**
 * Answers a request Node cut before any route saw it (Fastify's
 * `clientErrorHandler`): 408 `request_timeout` when it took longer than
 * `requestTimeoutMs`, 400 `bad_request` for one Node could not parse, each
 * with the protocol's {@link ErrorBody}, then closes the connection.
 * Fastify's own body (`{"error":"Request Timeout","statusCode":408}`) read
 * to a device as an unknown, final refusal, where a slow upload is worth
 * trying again.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A connection reset, or one already closed: nobody to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, reason, body] =
    error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? ([
          408,
          "Request Timeout",
          errorBody(
            "request_timeout",
            "The request did not arrive whole within this server's time limit; nothing of it was applied. Try again.",
          ),
        ] as const)
      : error.code === "HPE_HEADER_OVERFLOW"
        ? ([
            431,
            "Request Header Fields Too Large",
            errorBody("bad_request", "The request's headers are too large."),
          ] as const)
        : ([400, "Bad Request", errorBody("bad_request", "The request is not valid HTTP.")] as const);
  const json = JSON.stringify(body);
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
    );
  socket.destroy(error);
}

/** A query parameter as a non-negative integer, or the default. */
export function intParam(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const parsed = typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(parsed) || parsed > max)
    throw new ProtocolError(`Query parameter "${name}" must be an integer from 0 to ${max}.`);
  return parsed;
}

/**
 * Sets up the request fields, the MessagePack body parser (anything else
 * gets 415 with the type to use), and the error and not-found handlers:
 * every failure answers with an {@link ErrorBody}.
 */
export function installProtocol(app: FastifyInstance): void {
  app.decorateRequest("userId", "");
  app.decorateRequest("space", "");
  app.decorateRequest("unscoped", true);
  app.decorateRequest("bodySlot", undefined);
  // Any answer sent before its request's body was read (a refusal, no route, the health check): the server
  // would go on reading and discarding that body for as long as its bytes came (Fastify sets no time limit
  // on receiving one), a connection held at the client's will. Closing it after the answer ends that.
  app.addHook("onSend", async (request, reply) => {
    if (!request.raw.complete) reply.header("connection", "close");
  });
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
}

/**
 * Answers a request for no route (404) from its headers alone. Fastify
 * otherwise reads and decodes a body of the sync media type, up to
 * `maxBodyBytes`, before its not-found handler runs: any stranger could
 * have the server hold 16 MiB per connection, or a connection for as long
 * as it trickled that body in. Added after CORS and the database's
 * readiness, so their answers come first as before.
 */
export function answerUnroutedEarly(app: FastifyInstance): void {
  app.addHook("onRequest", async (request, reply) => {
    if (!request.is404 || reply.sent) return undefined;
    return reply.code(404).send(errorBody("not_found", `No route ${request.method} ${request.url}.`));
  });
}

/** Answers pages on `origins` (CORS), preflights included: browsers ask first because of the Authorization header. */
export function installCors(app: FastifyInstance, origins: readonly string[] | "*"): void {
  app.addHook("onRequest", async (request, reply) => {
    const origin = request.headers.origin;
    if (typeof origin !== "string" || (origins !== "*" && !origins.includes(origin))) return;
    reply.header("access-control-allow-origin", origins === "*" ? "*" : origin).header("vary", "origin");
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
