/**
 * A guard process that ends what a test started outside its own process
 * tree (PostgreSQL daemonized by `pg_ctl`, server process groups) when the
 * test's process ends without doing it: an uncaught throw, a timeout, a
 * SIGKILL of the whole run. Exit hooks cannot cover a SIGKILL; a pipe can:
 * the guard reads its orders on stdin, and the kernel closes that pipe
 * whatever way its owner dies. At end of input the guard carries out every
 * order still held, newest first (servers before their database), and exits.
 *
 * The guard runs in a process group of its own, so a Ctrl-C sent to the
 * terminal's group cannot end it before it has reaped.
 */
import { spawn, type ChildProcess } from "node:child_process";

/** What the guard does with one order when its owner is gone. */
export type ReapOrder =
  /** SIGKILL to a whole process group (a child spawned `detached`). */
  | { group: number }
  /** Runs a command to its end (for example `pg_ctl stop -m immediate`). */
  | { run: readonly string[] }
  /** Deletes a directory tree. */
  | { remove: string };

// Plain JavaScript for `node -e`: no file to find from a bundled caller.
const GUARD = `
const { execFileSync } = require("node:child_process");
const { rmSync } = require("node:fs");
const held = new Map();
let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffered += chunk;
  let end;
  while ((end = buffered.indexOf("\\n")) >= 0) {
    const message = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (message.drop !== undefined) held.delete(message.drop);
    else held.set(message.id, message.order);
  }
});
process.stdin.on("end", () => {
  for (const order of [...held.values()].reverse()) {
    try {
      if (order.group !== undefined) process.kill(-order.group, "SIGKILL");
      else if (order.run) execFileSync(order.run[0], order.run.slice(1), { stdio: "ignore", timeout: 30000 });
      else if (order.remove) rmSync(order.remove, { recursive: true, force: true });
    } catch {}
  }
  process.exit(0);
});
`;

/** The owner's side of a guard: hand it orders, take them back once done by hand. */
export class Reaper {
  readonly #guard: ChildProcess;
  #next = 0;
  #closed = false;

  constructor() {
    this.#guard = spawn(process.execPath, ["-e", GUARD], { detached: true, stdio: ["pipe", "ignore", "ignore"] });
    // Neither the guard nor its pipe keeps the owner alive: the pipe closing is the signal.
    this.#guard.unref();
    (this.#guard.stdin as unknown as { unref(): void }).unref();
  }

  /** The guard's process id (for a test that checks it is gone). */
  get pid(): number {
    return this.#guard.pid!;
  }

  /**
   * Hands the guard `order`, carried out if this process ends before the
   * returned function takes it back.
   */
  hold(order: ReapOrder): () => void {
    const id = this.#next++;
    this.#send({ id, order });
    return () => this.#send({ drop: id });
  }

  /**
   * Ends the guard: the orders it still holds are carried out now (call it
   * after releasing what was cleaned up by hand; whatever was not is reaped).
   */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    const guard = this.#guard;
    if (guard.exitCode !== null || guard.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((done) => guard.once("exit", () => done()));
    guard.stdin!.end();
    return exited;
  }

  #send(message: object): void {
    if (!this.#closed) this.#guard.stdin!.write(`${JSON.stringify(message)}\n`);
  }
}
