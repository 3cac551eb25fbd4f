/**
 * Who a request is: the bearer token mapped to a user (and the app's
 * space) from the headers alone, before a byte of the body is read, and
 * each user's requests a minute.
 */
/// <reference types="node" />
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import rateLimit from "@fastify/rate-limit";
import { parseApp } from "../sync/protocol.js";
import type { AppSpaces } from "./apps.js";
import { Strikes, strikeKey, strikeSite } from "./gate.js";
import { errorBody } from "./http.js";
import { SyncHttpError } from "./store.js";

/** An `onRequest` hook that authenticates a request, or answers it 401. */
export type Authenticated = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;

/** Remote addresses whose strikes (requests without a valid token) one process remembers at once. */
const STRIKE_ADDRESSES = 10_000;

/**
 * How many times an address's strikes one IPv6 /48 may take in all: its
 * 65,536 /64s are more than the addresses remembered, so counted by /64
 * alone a host holding a /48 (a tunnel broker gives one away) took a fresh
 * /64 for each guess, and the oldest were forgotten before their limit.
 */
const STRIKES_PER_SITE = 16;

/**
 * The hook every route but health runs: the user is known from the headers
 * alone before a byte of the body is read (onRequest runs before parsing),
 * so a stranger's body costs the server nothing but the bytes it discards.
 * And each remote address may make `badTokensPerMinute` requests without a
 * valid token or with a malformed `app` (a request counts while
 * `authenticate` runs, and stops counting once it names a user and app): past that, 429 before `authenticate` is
 * asked, so a flood of guessed tokens costs no lookup, however many at once.
 */
export function authenticator(
  authenticate: (token: string) => string | undefined | Promise<string | undefined>,
  spaces: AppSpaces,
  badTokensPerMinute: number,
): Authenticated {
  const strikes = new Strikes(badTokensPerMinute, 60_000, STRIKE_ADDRESSES);
  const sites = new Strikes(badTokensPerMinute * STRIKES_PER_SITE, 60_000, STRIKE_ADDRESSES);
  return async (request, reply) => {
    const address = strikeKey(request.ip);
    const site = strikeSite(request.ip);
    const pardon = takeStrike(strikes, address, sites, site);
    if (!pardon) {
      const waitMs = Math.max(strikes.retryAfterMs(address), site === undefined ? 0 : sites.retryAfterMs(site));
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      return reply
        .code(429)
        .header("connection", "close")
        .header("retry-after", String(seconds))
        .send(
          errorBody(
            "rate_limited",
            `Over this server's limit of ${badTokensPerMinute} requests a minute from one address refused before sign-in (no valid token, or a malformed app); try again in ${seconds} s.`,
          ),
        );
    }
    const header = request.headers.authorization;
    const match = typeof header === "string" ? /^Bearer (\S+)$/.exec(header) : null;
    let userId: string | undefined;
    try {
      userId = match ? await authenticate(match[1]!) : undefined;
    } catch (error) {
      pardon(); // the server's own failure (500), not the client's token
      throw error;
    }
    if (typeof userId !== "string" || userId.length === 0) {
      // Returning the reply ends the request here: no parsing, no handler. And the connection: the
      // server would otherwise go on reading (and discarding) a body for as long as its bytes came.
      return reply
        .code(401)
        .header("connection", "close")
        .send(errorBody("unauthorized", "Missing or unknown token: send `Authorization: Bearer <token>`."));
    }
    request.userId = userId;
    const app = (request.query as Record<string, unknown>).app;
    // A malformed app keeps the strike: refused here, the request never reaches its user's rate limit.
    const named = app === undefined ? undefined : parseApp(app);
    pardon();
    const resolved = await spaces.resolve(userId, named);
    request.space = resolved.space;
    request.unscoped = resolved.unscoped;
    return undefined;
  };
}

/**
 * A strike for `address`, and for its IPv6 `site` too: the function that
 * gives both back, or undefined (taking none) when either has none left.
 */
function takeStrike(
  strikes: Strikes,
  address: string,
  sites: Strikes,
  site: string | undefined,
): (() => void) | undefined {
  const own = strikes.take(address);
  if (!own || site === undefined) return own;
  const shared = sites.take(site);
  if (!shared) {
    own();
    return undefined;
  }
  return () => {
    own();
    shared();
  };
}

/**
 * Limits each user to `perMinute` requests, after `authenticated` (onRequest)
 * and before the body is read (preParsing), on the routes added after this
 * call only: the plugin hooks each route as it is added (onRoute), so health
 * and readiness, added before, are never counted (health-limit.node.test.ts),
 * and an unknown path beside them is answered 404 in onRequest, before any
 * limit: no allowList is needed (one matching their URLs was never consulted).
 */
export async function limitUsers(app: FastifyInstance, perMinute: number): Promise<void> {
  await app.register(rateLimit, {
    hook: "preParsing",
    max: perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.userId || request.ip,
    // Thrown, so the error handler answers it like every other refusal (Retry-After is already set).
    errorResponseBuilder: (_request, context) =>
      new SyncHttpError(
        429,
        "rate_limited",
        `Over this server's limit of ${context.max} requests a minute; try again in ${context.after}.`,
      ),
  });
}
