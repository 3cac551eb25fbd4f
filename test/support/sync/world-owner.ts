/**
 * A process that owns a convergence world and ends without closing it
 * (test/suites/sync-convergence-world.node.test.ts): it prints what the
 * world runs as one JSON line, then throws uncaught (`throw`) or waits to
 * be killed (`wait`).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startWorld } from "./convergence.js";

/** What the owner prints: every process and directory the world holds. */
export interface WorldProcesses {
  owner: number;
  guard: number;
  servers: number[];
  /** The PostgreSQL postmaster's process id (the first line of postmaster.pid). */
  postmaster: number;
  dirs: string[];
}

const world = await startWorld([1]);
const postmaster = Number(readFileSync(join(world.postgres.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
const held: WorldProcesses = {
  owner: process.pid,
  guard: world.reaper.pid,
  servers: world.servers.map((server) => server.pid!),
  postmaster,
  dirs: [world.postgres.dir, world.bundle.dir],
};
console.log(JSON.stringify(held));
if (process.argv[2] === "throw") throw new Error("a run that throws past world.close()");
setInterval(() => undefined, 60_000);
