/**
 * A TCP proxy in front of a real PostgreSQL that can fall silent: once
 * `silence()` is called, it forwards nothing more either way on any
 * connection, open or new, and closes none of them itself, as a hung
 * backend or a network black hole (packets dropped, no reset) looks to a
 * client: connections are accepted, statements and goodbyes go unanswered.
 * It counts the connections its clients still hold open, so a test can see
 * a client close every socket it opened.
 */
/// <reference types="node" />
import { connect, createServer, type Socket } from "node:net";
import { listenInFront } from "./holding-proxy.js";

/** A running proxy. */
export interface SilentProxy {
  /** `url` with its host and port replaced by the proxy's. */
  readonly url: string;
  /** From now on, nothing passes either way, and the database's closes are not passed on. */
  silence(): void;
  /** Resolves once a client sent something after {@link silence} (a statement, or a new connection's first bytes). */
  readonly heard: Promise<void>;
  /** Connections whose client has not closed its side yet. */
  open(): number;
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
}

/** Starts a proxy to the PostgreSQL of the connection string `url` on a free loopback port. */
export async function startSilentProxy(url: string): Promise<SilentProxy> {
  const target = new URL(url);
  let silent = false;
  let markHeard!: () => void;
  const heard = new Promise<void>((resolve) => (markHeard = resolve));
  const clients = new Set<Socket>();
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (down) => {
    const up = connect(Number(target.port), target.hostname);
    clients.add(down);
    for (const socket of [down, up]) sockets.add(socket);
    // A client's end (FIN) or close both count as its side closed: a silent peer answers neither.
    down.on("end", () => clients.delete(down));
    down.on("close", () => {
      clients.delete(down);
      sockets.delete(down);
      if (!silent) up.destroy();
    });
    up.on("close", () => sockets.delete(up));
    down.on("data", (chunk: Buffer) => {
      if (silent) return markHeard();
      up.write(chunk);
    });
    up.on("data", (chunk: Buffer) => {
      if (!silent) down.write(chunk);
    });
    up.on("end", () => {
      if (!silent) down.end();
    });
    up.on("error", () => undefined);
    down.on("error", () => undefined);
  });
  const proxied = await listenInFront(server, url);
  return {
    url: proxied,
    silence: () => void (silent = true),
    heard,
    open: () => clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
