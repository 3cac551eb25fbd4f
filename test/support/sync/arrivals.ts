/**
 * The requests a sync server receives, watched from the test through its
 * Node HTTP server: a test waits for the server to have let a request in,
 * or to have seen a request's client go, instead of sleeping for a time
 * meant to be long enough (too short on a loaded machine, wasted on an
 * idle one).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { SyncServer } from "../../../src/sync-server.js";

/** One request, as the server's Node HTTP server received it. */
export interface Arrival {
  request: IncomingMessage;
  /** Whether its response closed: answered whole, or its connection gone. */
  closed: boolean;
  /** Whether its connection closed before its answer was sent whole: its client went away. */
  left: boolean;
}

/** Waits until `check` holds, looking every 5 ms; throws saying `what` after `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (const deadline = Date.now() + ms; !check(); await new Promise((resolve) => setTimeout(resolve, 5))) {
    if (Date.now() > deadline) throw new Error(`Not within ${ms} ms: ${what}.`);
  }
}

/**
 * Records the requests `server` receives from now on, in order of arrival
 * (`stop()` ends it). A request's body is read only once the server let it
 * in (it took one of its user's places; a refused one is answered unread),
 * so a request whose body is being read was let in.
 */
export function watchArrivals(server: SyncServer) {
  const http = server.app.server;
  const arrived: Arrival[] = [];
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    const arrival: Arrival = { request, closed: false, left: false };
    // Registered before the server's own listeners of this request: they have run once this one's turn is over.
    response.once("close", () => {
      arrival.closed = true;
      arrival.left = !response.writableFinished;
    });
    arrived.push(arrival);
  };
  http.on("request", listener);
  return {
    arrived,
    /** Resolves once `count` of the requests received since are having their bodies read. */
    admitted: (count: number) =>
      until(
        () => arrived.filter((a) => a.request.readableFlowing === true).length >= count,
        `${count} requests let in (${arrived.length} arrived)`,
      ),
    /** Resolves once the server saw the client of `count` of them go away before its answer. */
    left: (count: number) => until(() => arrived.filter((a) => a.left).length >= count, `${count} clients gone`),
    /** Resolves once each of `these` (taken from `arrived`) has closed. */
    closed: (these: Arrival[]) => until(() => these.every((a) => a.closed), `${these.length} requests closed`),
    stop: () => http.off("request", listener),
  };
}
