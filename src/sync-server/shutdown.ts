/**
 * How a sync server closes in a bounded time whatever its database does. A
 * database that accepts connections and then never answers (a hung backend,
 * a network black hole dropping packets) leaves every statement, every new
 * connection and every polite goodbye waiting for ever: a connection's
 * `end()` sends its farewell and waits for the database to close the socket,
 * and pg's `connectionTimeoutMillis` is 0 (no bound) unless set. So a closing
 * server gives its requests a grace period, then answers those still running
 * 503 itself, destroys every database socket it opened (nothing keeps the
 * process alive after `close()`), and cuts the HTTP connections left.
 */
/// <reference types="node" />
import type { Socket } from "node:net";
import type { FastifyInstance, FastifyReply } from "fastify";
import pg from "pg";
import { errorBody } from "./http.js";
import type { DatabaseStartup } from "./startup.js";

/** How long requests in flight may take to finish once `close()` is called. */
export const CLOSE_GRACE_MS = 2000;

/** How long after the grace the 503 answers and the ends of connections may take before they are cut. */
export const CLOSE_CUT_MS = 1000;

/**
 * The database connections one server opened itself (its pool's, its
 * listener's, its index build's), so that a close can destroy those a
 * silent database would keep open. A connection leaves once its socket closed.
 */
export class OwnConnections {
  readonly #open = new Set<pg.Client>();

  /** Registers `client` (before it connects) and returns it. */
  add<C extends pg.Client>(client: C): C {
    this.#open.add(client);
    client.connection.stream.once("close", () => this.#open.delete(client));
    return client;
  }

  /** A new client on `options`, registered. */
  client(options: pg.ClientConfig): pg.Client {
    return this.add(new pg.Client(options));
  }

  /** A `pg.Client` class whose instances register themselves: a pool's `Client` option. */
  clientClass(): typeof pg.Client {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the class below is made per server
    const own = this;
    return class OwnClient extends pg.Client {
      constructor(options?: string | pg.ClientConfig) {
        super(options);
        own.add(this);
      }
    };
  }

  /** Destroys every socket still open: what runs on it fails as a lost connection. */
  destroy(): void {
    for (const client of this.#open) client.connection.stream.destroy();
    this.#open.clear();
  }
}

/** The HTTP connections of each app, so that its close can end those that never sent a byte. */
const connectionsOf = new WeakMap<FastifyInstance, Set<Socket>>();

/**
 * Keeps the replies of the requests `app` is handling, so that a close can
 * answer those still running when the grace ends, and its connections (see
 * {@link closeServer}).
 */
export function trackInFlight(app: FastifyInstance): Set<FastifyReply> {
  const replies = new Set<FastifyReply>();
  app.addHook("onRequest", async (_request, reply) => {
    replies.add(reply);
    reply.raw.once("close", () => replies.delete(reply));
  });
  const sockets = new Set<Socket>();
  connectionsOf.set(app, sockets);
  app.server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  return replies;
}

/**
 * Ends the connections of `app` that have not sent a byte: Node's close
 * ends a connection idle after a request, but waits for one that never sent
 * any (a client's connection opened ahead of its request, or kept after the
 * request it was for was aborted before it went out: Node's fetch does so),
 * and every such close waited until it cut them, at its 3 s bound.
 */
function endSilentConnections(app: FastifyInstance): void {
  for (const socket of connectionsOf.get(app) ?? []) if (socket.bytesRead === 0) socket.destroy();
}

/**
 * Answers every request here while the server cannot serve it, health
 * included (a balancer should look elsewhere): 503 `unavailable` with
 * Retry-After until `startup` reached the database and from the moment
 * `closing()` says so (a request on a connection kept alive from before;
 * its connection is closed after), 500 `internal` once the setup failed.
 * Added after CORS, so that a page can read the answer. Once closing, each
 * connection closes after the last answer queued on it (`inFlight`, see
 * {@link trackInFlight}).
 */
export function refuseUnlessServing(
  app: FastifyInstance,
  startup: DatabaseStartup,
  closing: () => boolean,
  inFlight: Set<FastifyReply>,
): void {
  // Fastify's close ends only the connections idle when it begins: one whose request was in flight (a
  // readiness probe, a long poll answered at once) was kept alive after its answer, and every close that
  // raced a request waited until it cut that connection, at its 3 s bound.
  app.addHook("onSend", async (_request, reply, payload) => {
    if (closing()) closeAfterLast(inFlight, reply);
    return payload;
  });
  app.addHook("onRequest", async (_request, reply) => {
    if (reply.sent || (startup.state === "ready" && !closing())) return undefined;
    if (closing())
      return reply
        .code(503)
        .header("retry-after", "1")
        .send(errorBody("unavailable", "The sync server is shutting down; nothing was applied. Try again."));
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
}

/**
 * Ends the connection of `reply` after the last answer queued on it. Node
 * writes the answers of pipelined requests in order, and ends a connection
 * after one that says `connection: close`: said on the answer in flight, it
 * dropped every answer queued behind it (a push's that committed, the 503
 * of one that came during the close), and their client read only an end of
 * stream. So only the last says it; or, when that one's head is already
 * out (answered before the close began), the connection ends once it is.
 */
function closeAfterLast(inFlight: Set<FastifyReply>, reply: FastifyReply): void {
  const socket = reply.request.raw.socket;
  let seen = false;
  let last: FastifyReply | undefined;
  // In arrival order (trackInFlight's onRequest hook runs first): those after `reply` came after it.
  for (const other of inFlight) {
    if (other === reply) seen = true;
    else if (seen && other.request.raw.socket === socket) last = other;
  }
  if (!last) reply.header("connection", "close");
  else if (last.raw.headersSent) last.raw.once("finish", () => socket.destroySoon());
}

/**
 * Answers 503 `unavailable` to every request of `replies` not answered yet,
 * its connection closed after the last (see {@link closeAfterLast}). A push
 * cut here either committed or did not (one transaction), as with a
 * connection cut: a device sends it again, and a push sent again applies once.
 */
export function answerUnfinished(replies: Set<FastifyReply>): void {
  for (const reply of replies) {
    if (reply.sent || reply.raw.headersSent) continue;
    void reply
      .code(503)
      .header("retry-after", "1")
      .send(
        errorBody(
          "unavailable",
          "The sync server shut down before this request finished; it may not have been applied. Try again.",
        ),
      );
  }
}

/** Work a close ends, with what it does in words (the report of its failure names it). */
export type FinalWork = readonly [what: string, work: () => Promise<unknown>];

/** What {@link closeServer} closes. */
export interface Closing {
  app: FastifyInstance;
  /** The requests in flight (see {@link trackInFlight}). */
  inFlight: Set<FastifyReply>;
  connections: OwnConnections;
  /** Started at once, none waiting on another: a database that stopped answering holds each of them. */
  first: readonly FinalWork[];
  /** Started once `first` settled (the pool, which the requests in flight still use). */
  last?: FinalWork;
}

/**
 * Closes a server within {@link CLOSE_GRACE_MS} + {@link CLOSE_CUT_MS}
 * whatever its database does (see this file's comment). A failure of the
 * final work is reported on the server's logger, at error level (the CLI
 * prints it), and the rest of the work goes on: before, the first failure
 * (an onClose hook of the app's) skipped the pool's end, and neither was
 * told to anyone. Resolves all the same: by then the server serves nothing
 * and has released what it could; a rejection would leave its caller (a
 * SIGTERM handler, a test's `afterAll`) nothing to do but crash or hide its
 * own error, and a second close could not redo the work.
 */
export async function closeServer({ app, inFlight, connections, first, last }: Closing): Promise<void> {
  const settle = async ([what, work]: FinalWork): Promise<void> => {
    try {
      await work();
    } catch (error) {
      app.log.error({ err: error }, `The sync server's close could not ${what}; the rest of the close went on.`);
    }
  };
  endSilentConnections(app);
  const ended = Promise.all(first.map(settle)).then(() => (last ? settle(last) : undefined));
  if (await within(ended, CLOSE_GRACE_MS)) return;
  answerUnfinished(inFlight);
  connections.destroy();
  if (!(await within(ended, CLOSE_CUT_MS))) app.server.closeAllConnections();
  connections.destroy(); // one the pool or the build opened meanwhile
}

/**
 * Whether `work` settled within `ms`. The timer is cleared once it did: a
 * test's fake timers, which never fire it, wait only for `work`.
 */
export async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
