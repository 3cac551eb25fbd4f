/**
 * The convergence test's servers: the package's sync server CLI
 * (src/sync-server/cli.ts) running as real child processes, so a kill is a
 * SIGKILL of a process holding PostgreSQL connections and open sockets, as
 * a crash in production would be. The CLI is bundled once per test process
 * with Vite (Node 20 runs no TypeScript), into node_modules/.cache so its
 * bare imports (fastify, pg) resolve to the repository's packages.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import type { Reaper } from "../reaper.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** A bundled script: where it is, and how to remove it. */
export interface ServerBundle {
  cli: string;
  dir: string;
  remove(): void;
}

/**
 * Bundles `entry` (a path from the repository's root) for Node into a
 * directory of this process, named after `name`: at node_modules/.cache/<dir>,
 * as deep as test/support/sync, so a bundled module that finds the root
 * from its own URL (as this one does) finds the same root.
 */
export async function bundleForNode(entry: string, name: string): Promise<ServerBundle> {
  const dir = join(root, "node_modules", ".cache", `lgidb-${name}-${process.pid}`);
  await build({
    configFile: false,
    logLevel: "error",
    root,
    build: {
      ssr: join(root, entry),
      outDir: dir,
      emptyOutDir: true,
      minify: false,
      rollupOptions: { output: { format: "es", entryFileNames: "[name].mjs", chunkFileNames: "[name].mjs" } },
    },
  });
  const file = join(dir, `${basename(entry, extname(entry))}.mjs`);
  return { cli: file, dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Bundles the sync server CLI into a directory of this process. */
export function bundleServer(): Promise<ServerBundle> {
  return bundleForNode("src/sync-server/cli.ts", "convergence-server");
}

/**
 * One server process on a fixed port: started, killed (SIGKILL), started
 * again. Each start is a process group of its own, held by the world's
 * {@link Reaper} until it has exited, so no way this test process ends
 * leaves it running.
 */
export class ServerProcess {
  #child: ChildProcess | undefined;
  #output = "";
  /** Where the current start's output begins in {@link output}'s buffer. */
  #startedAt = 0;
  readonly #tokensFile: string;
  /** Exits nobody asked for (the server must survive its database restarting). */
  readonly crashes: string[] = [];

  constructor(
    readonly port: number,
    readonly bundle: ServerBundle,
    readonly databaseUrl: string,
    name: string,
    readonly reaper: Reaper,
  ) {
    this.#tokensFile = join(bundle.dir, `${name}-tokens.json`);
  }

  /** True while the process runs. */
  get alive(): boolean {
    return this.#child !== undefined;
  }

  /** The tail of what the process printed, for a failure report. */
  get output(): string {
    return this.#output.slice(-4000);
  }

  /**
   * Starts the process and resolves once it listens. Tokens are
   * `token-of-<user>` for every user in `users` (the file is re-read at each start).
   */
  async start(users: Iterable<string>): Promise<void> {
    if (this.#child) return;
    const tokens: Record<string, string> = {};
    for (const user of users) tokens[`token-of-${user}`] = user;
    mkdirSync(this.bundle.dir, { recursive: true });
    writeFileSync(this.#tokensFile, JSON.stringify(tokens));
    const child = spawn(process.execPath, [this.bundle.cli], {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        DATABASE_URL: this.databaseUrl,
        SYNC_TOKENS_FILE: this.#tokensFile,
        PORT: String(this.port),
        HOST: "127.0.0.1",
        // The test sends far more requests per minute than a person would.
        SYNC_REQUESTS_PER_MINUTE: "1000000",
        // The Chromium device's page is served from another origin than its link to the servers.
        SYNC_CORS_ORIGINS: "*",
      },
    });
    this.#child = child;
    this.#startedAt = this.#output.length;
    const release = this.reaper.hold({ group: child.pid! });
    child.once("exit", release);
    await new Promise<void>((done, fail) => {
      const onData = (chunk: Buffer) => {
        this.#output += chunk.toString();
        if (this.#output.includes("listening on", this.#startedAt)) done();
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", (chunk: Buffer) => void (this.#output += chunk.toString()));
      child.once("exit", (code, signal) => {
        this.#output += `\n[exited: ${code ?? signal}]\n`;
        if (this.#child === child) {
          this.#child = undefined;
          this.crashes.push(this.output);
        }
        fail(new Error(`sync server on port ${this.port} exited (${code ?? signal}):\n${this.output}`));
      });
    });
  }

  /** The running process's id, if one runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Resolves once this start's output matches `pattern`; rejects after `ms`,
   * or once the process has exited without printing it.
   */
  async waitFor(pattern: RegExp, ms = 15_000): Promise<void> {
    const until = performance.now() + ms;
    while (!pattern.test(this.#output.slice(this.#startedAt))) {
      if (!this.#child) throw new Error(`sync server on port ${this.port} exited before ${pattern}:\n${this.output}`);
      if (performance.now() > until)
        throw new Error(`sync server on port ${this.port}: no ${pattern} within ${ms} ms:\n${this.output}`);
      await new Promise((done) => setTimeout(done, 25));
    }
  }

  /**
   * Resolves once the running process has reached its database (it listens
   * before that, answering 503, when started while PostgreSQL is down).
   */
  ready(ms = 15_000): Promise<void> {
    return this.waitFor(/database ready/, ms);
  }

  /**
   * Asks the process to stop (SIGTERM, as a deployment would) and resolves with its exit code once it is
   * gone and {@link output} holds all it printed (its pipes closed: what it wrote last may come after its exit).
   */
  async stop(): Promise<number | null> {
    const child = this.#child;
    if (!child) return null;
    this.#child = undefined;
    const exited = new Promise<number | null>((done) => child.once("close", (code) => done(code)));
    child.kill("SIGTERM");
    return exited;
  }

  /** Kills the process group at once (SIGKILL) and waits for the process to be gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    const exited = new Promise((done) => child.once("exit", done));
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Its group is gone already (the exit event is on its way).
    }
    await exited;
  }
}
