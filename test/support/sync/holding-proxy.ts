/**
 * A TCP proxy in front of a real PostgreSQL that can hold what the database
 * sends: once `hold()` is called, each connection open then keeps its bytes
 * from the database until the database closes that connection, then hands
 * them to the client in one write with the close. A network may deliver a
 * query's last answer and the termination notice that followed it in one
 * read; this makes it always do so, where timing alone does it now and
 * then. Or it can `stall()` the connections open now: what the database
 * sends them (its close too) waits until the client sends something, as a
 * client finds a connection the database dropped without the client
 * hearing (a restart). Connections made later pass as before: the client
 * can connect again.
 */
/// <reference types="node" />
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";

/** A running proxy. */
export interface HoldingProxy {
  /** `url` with its host and port replaced by the proxy's. */
  readonly url: string;
  /** From now on, the connections open now keep their bytes from the database until it closes them (`false`: pass them again). */
  hold(on?: boolean): void;
  /**
   * From now on, each connection open now gets what the database sends it
   * (and its close) only when the client next sends something; what the
   * client sends then is dropped if the database closed the connection.
   */
  stall(): void;
  /** Resolves once some bytes are held (the database answered something since `hold`). */
  readonly held: Promise<void>;
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
}

/** How one connection passes the database's bytes. */
interface Passage {
  holding: boolean;
  stalled: boolean;
}

/** Starts a proxy to the PostgreSQL of the connection string `url` on a free local port. */
export async function startHoldingProxy(url: string): Promise<HoldingProxy> {
  const target = new URL(url);
  let markHeld!: () => void;
  const held = new Promise<void>((resolve) => (markHeld = resolve));
  const sockets = new Set<Socket>();
  const passages = new Set<Passage>();
  const server: Server = createServer((down) => {
    const up = connect(Number(target.port), target.hostname);
    for (const socket of [down, up]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    }
    const kept: Buffer[] = [];
    const passage: Passage = { holding: false, stalled: false };
    let upEnded = false;
    passages.add(passage);
    down.on("close", () => passages.delete(passage));
    down.on("data", (chunk: Buffer) => {
      if (passage.stalled) {
        // The client speaks: it hears what the database sent meanwhile, its close too.
        passage.stalled = false;
        down.write(Buffer.concat(kept.splice(0)));
        if (upEnded) return void down.end();
      }
      up.write(chunk);
    });
    up.on("data", (chunk: Buffer) => {
      if (!passage.holding && !passage.stalled) return void down.write(chunk);
      kept.push(chunk);
      if (passage.holding) markHeld();
    });
    up.on("end", () => {
      upEnded = true;
      if (!passage.stalled) down.end(Buffer.concat(kept));
    });
    up.on("error", () => down.destroy());
    down.on("error", () => up.destroy());
    down.on("close", () => up.destroy());
  });
  const proxied = await listenInFront(server, url);
  return {
    url: proxied,
    hold: (on = true) => passages.forEach((passage) => void (passage.holding = on)),
    stall: () => passages.forEach((passage) => void (passage.stalled = true)),
    held,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** Has `server` listen on a free loopback port; resolves with `url` with its host and port replaced by it. */
export async function listenInFront(server: Server, url: string): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxied = new URL(url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String((server.address() as AddressInfo).port);
  return proxied.toString();
}
