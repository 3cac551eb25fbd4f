/**
 * Readiness, for an orchestrator's readiness probe: `GET /v1/ready` answers
 * 200 when the database answers a trivial query within
 * {@link READY_BOUND_MS}, 503 `unavailable` otherwise, never later. Beside
 * `/v1/health`, the liveness answer, which stays ok while the database is
 * down: a liveness probe must not restart a server because its database
 * blinked, while a readiness probe should take it out of rotation meanwhile.
 *
 * The query runs on a short-lived connection of its own, made with the
 * pool's settings, not on a pooled one: pg-pool can neither bound nor cut a
 * checkout, so a connect that a silent database never answers would hold
 * the probe for ever (and readiness at 503 after the database came back),
 * and a pool busy with requests would take a loaded server out of rotation,
 * putting its load on the others. One probe query at a time, however many
 * requests ask: those arriving while one runs share its answer (a
 * connection's goodbye after its answer, cut at the bound too, holds none).
 */
/// <reference types="node" />
import type { FastifyInstance } from "fastify";
import type pg from "pg";
import { SYNC_PATH, SYNC_PROTOCOL_VERSION } from "../sync/protocol.js";
import { errorBody } from "./http.js";

/**
 * Most time a readiness answer waits for the database, in milliseconds:
 * then the probe's connection is cut and the answer is 503.
 */
export const READY_BOUND_MS = 1000;

function ignore(): void {}

/** Whether the database answers now, asked on one connection at a time. */
export class ReadinessProbe {
  readonly #connect: () => pg.Client;
  /** The answer of the probe under way, until it came. */
  #current: Promise<boolean> | undefined;

  /**
   * @param connect Makes a new client on the server's database (registered with the server's own
   * connections, so a close destroys one still open).
   */
  constructor(connect: () => pg.Client) {
    this.#connect = connect;
  }

  /**
   * Resolves within the bound: true if `SELECT 1` was answered by then,
   * false otherwise. While a probe runs, callers share its answer; the
   * next caller after it starts a new one.
   */
  ready(): Promise<boolean> {
    if (this.#current) return this.#current;
    const client = this.#connect();
    client.on("error", ignore); // a lost connection fails the probe below; nothing to crash
    let settle!: (ready: boolean) => void;
    const current = new Promise<boolean>((resolve) => (settle = resolve));
    // Past the bound the connection is cut, whatever it waits on (its connect, the query, its goodbye):
    // a silent database holds each for ever. The answer is false if it had not come by then.
    const cut = setTimeout(() => {
      settle(false);
      client.connection.stream.destroy();
    }, READY_BOUND_MS);
    cut.unref();
    const answered = client.connect().then(() => client.query("SELECT 1"));
    answered.then(
      () => settle(true),
      () => settle(false),
    );
    void answered
      .catch(ignore)
      .then(() => client.end())
      .catch(ignore)
      .then(() => clearTimeout(cut));
    this.#current = current;
    void current.then(() => (this.#current = undefined));
    return current;
  }
}

/** Adds `GET /v1/ready` to `app`, answered by `probe`. */
export function addReadiness(app: FastifyInstance, probe: ReadinessProbe): void {
  app.get(`${SYNC_PATH}/ready`, async (_request, reply) => {
    if (await probe.ready()) return reply.send({ ok: true, v: SYNC_PROTOCOL_VERSION });
    return reply
      .code(503)
      .header("retry-after", "1")
      .send(
        errorBody(
          "unavailable",
          `The sync server cannot reach its database now (no answer within ${READY_BOUND_MS} ms). Try again.`,
        ),
      );
  });
}
