/**
 * Counts a closing sync server's cuts: the calls of its HTTP server's
 * `closeAllConnections`, which its close makes only for the connections
 * left at its bound (see src/sync-server/shutdown.ts). A close that need not
 * cut any ended without waiting for that bound.
 */
import type { Server } from "node:http";

/** Counts the calls of `http.closeAllConnections` from now on. */
export function countCuts(http: Server): { count: number } {
  const cuts = { count: 0 };
  const closeAll = http.closeAllConnections.bind(http);
  http.closeAllConnections = () => {
    cuts.count += 1;
    closeAll();
  };
  return cuts;
}
