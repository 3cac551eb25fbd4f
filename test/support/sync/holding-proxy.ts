/**
 * A TCP proxy in front of a real PostgreSQL that can hold what the database
 * sends: once `hold()` is called, each connection's bytes from the database
 * are kept until the database closes that connection, then handed to the
 * client in one write with the close. A network may deliver a query's last
 * answer and the termination notice that followed it in one read; this
 * makes it always do so, where timing alone does it now and then.
 */
/// <reference types="node" />
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";

/** A running proxy. */
export interface HoldingProxy {
  /** `url` with its host and port replaced by the proxy's. */
  readonly url: string;
  /** From now on, keeps every connection's bytes from the database until it closes (`false`: passes them again). */
  hold(on?: boolean): void;
  /** Resolves once some bytes are held (the database answered something since `hold`). */
  readonly held: Promise<void>;
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
}

/** Starts a proxy to the PostgreSQL of the connection string `url` on a free local port. */
export async function startHoldingProxy(url: string): Promise<HoldingProxy> {
  const target = new URL(url);
  let holding = false;
  let markHeld!: () => void;
  const held = new Promise<void>((resolve) => (markHeld = resolve));
  const sockets = new Set<Socket>();
  const server: Server = createServer((down) => {
    const up = connect(Number(target.port), target.hostname);
    for (const socket of [down, up]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    }
    const kept: Buffer[] = [];
    down.on("data", (chunk: Buffer) => up.write(chunk));
    up.on("data", (chunk: Buffer) => {
      if (!holding) return void down.write(chunk);
      kept.push(chunk);
      markHeld();
    });
    up.on("end", () => down.end(Buffer.concat(kept)));
    up.on("error", () => down.destroy());
    down.on("error", () => up.destroy());
    down.on("close", () => up.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxied = new URL(url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String((server.address() as AddressInfo).port);
  return {
    url: proxied.toString(),
    hold: (on = true) => void (holding = on),
    held,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
