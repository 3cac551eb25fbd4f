/**
 * The convergence world leaves nothing running when the process that owns
 * it ends without closing it (test/support/reaper.ts): a run that throws
 * uncaught, or a soak killed outright (SIGKILL, which no exit hook sees).
 * Each case starts a real world in a child process (bundled, as Node runs
 * no TypeScript) and checks afterwards that its server processes, its
 * PostgreSQL and their directories are gone.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleForNode, type ServerBundle } from "../support/sync/convergence-server.js";
import type { WorldProcesses } from "../support/sync/world-owner.js";

let owner: ServerBundle;

beforeAll(async () => {
  owner = await bundleForNode("test/support/sync/world-owner.ts", "world-owner");
}, 120_000);

afterAll(() => owner?.remove());

/** True while `pid` runs (a zombie, waiting for a parent to reap it, has stopped running). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Starts an owner in `mode`; resolves with what it holds once it printed it. */
function startOwner(mode: "throw" | "wait"): Promise<{ held: WorldProcesses; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [owner.cli, mode], { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  let output = "";
  return new Promise((done, fail) => {
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((text) => text.startsWith("{"));
      if (line) done({ held: JSON.parse(line) as WorldProcesses, exited });
    });
    void exited.then((code) => fail(new Error(`the owner exited (${code}) before its world ran:\n${output}`)));
  });
}

/** Waits until nothing of `held` runs or exists, or fails saying what is left after 20 s. */
async function expectNothingLeft(held: WorldProcesses): Promise<void> {
  const left = () => [
    ...[held.guard, ...held.servers, held.postmaster].filter(running).map((pid) => `process ${pid}`),
    ...held.dirs.filter((dir) => existsSync(dir)),
  ];
  const deadline = Date.now() + 20_000;
  while (left().length > 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 100));
  expect(left()).toEqual([]);
}

// The two owners run side by side: each mostly waits for initdb and its server processes.
describe.concurrent("a convergence world cut short", () => {
  it("a run that throws uncaught leaves no server, PostgreSQL or directory", { timeout: 90_000 }, async () => {
    const { held, exited } = await startOwner("throw");
    expect(held.servers.every(running) && running(held.postmaster)).toBe(true);
    expect(await exited).toBe(1);
    await expectNothingLeft(held);
  });

  it("a killed owner (SIGKILL) leaves no server, PostgreSQL or directory", { timeout: 90_000 }, async () => {
    const { held, exited } = await startOwner("wait");
    expect(held.servers.every(running) && running(held.postmaster)).toBe(true);
    process.kill(held.owner, "SIGKILL");
    await exited;
    await expectNothingLeft(held);
  });
});
