/**
 * Ports for the servers tests start in processes of their own (PostgreSQL, the sync server's CLI), chosen
 * before the process listens.
 */
import { createServer } from "node:net";

/**
 * A TCP port nobody listens on right now, below Linux's ephemeral range (32768-60999). A port from
 * `listen(0)` comes from that range, the one the kernel also draws every outgoing connection's source
 * port from: between this check and the server process's own listen (a few hundred milliseconds, a
 * process to spawn), another test's connection to PostgreSQL or Chromium took it once ("listen
 * EADDRINUSE: address already in use 127.0.0.1:34339"). Below the range only a listener can take it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error("no free port between 20000 and 32000 in 50 tries");
}

function canListen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.unref();
    server.once("error", () => done(false));
    server.listen(port, "127.0.0.1", () => server.close(() => done(true)));
  });
}
