/**
 * A real, throwaway PostgreSQL server for the tests that move threads to the
 * official Postgres saver.
 *
 * - `POSTGRES_URL` set: that server is used as is (CI service, `npm run postgres`).
 * - Otherwise a cluster is created in a temporary directory with Debian's
 *   server binaries (`/usr/lib/postgresql/<version>/bin`, or `POSTGRES_BIN`),
 *   as a copy of one initdb's output made once (see `clusterTemplate`),
 *   listening on 127.0.0.1 at a free port, with durability off (fsync,
 *   synchronous commit unless asked for) since it is deleted afterwards. PostgreSQL refuses to
 *   run as root, so as root it runs as the `postgres` user via `runuser`.
 *
 * The vitest globalSetup (`postgres-global-setup.ts`) starts it in the
 * background once per run and hands the URL to the tests (`provide`); tests
 * call {@link acquirePostgres}, which waits until it is ready, or starts a
 * cluster of its own when no globalSetup is configured.
 */
import { execFileSync, execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.js";

/** What the globalSetup hands to tests. */
export interface ProvidedPostgres {
  /** The connection URL (the server may still be starting: see `statusFile`). */
  url?: string;
  /** A file that reads `ready` once the server accepts connections, or `error: …`. */
  statusFile?: string;
  /** Why no server could be started. */
  error?: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    postgres: ProvidedPostgres;
  }
}

/** A running cluster. */
export interface RunningPostgres {
  url: string;
  /** Stops the server and deletes its directory. */
  stop(): Promise<void>;
  /** Stops the server at once (as a crash would: `-m immediate`), keeping its data. */
  kill(): Promise<void>;
  /** Starts a killed server again, on the same port and data. */
  restart(): Promise<void>;
  /**
   * A command that stops it from any process, and the directory to delete
   * then: `pg_ctl` leaves the server running when its starter dies, so a
   * guard that outlives the starter needs these (test/support/reaper.ts).
   */
  stopCommand: readonly string[];
  dir: string;
}

/** The directory holding `initdb`, `pg_ctl` and `postgres`, or a message saying what to do. */
export function findPostgresBin(): string {
  const candidates: string[] = [];
  if (process.env.POSTGRES_BIN) candidates.push(process.env.POSTGRES_BIN);
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((name) => /^\d+$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) candidates.push(join(debian, version, "bin"));
  }
  for (const dir of (process.env.PATH ?? "").split(":")) if (dir) candidates.push(dir);
  const found = candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
  if (!found) {
    throw new Error(
      "No PostgreSQL server binaries found (looked for initdb and pg_ctl in $POSTGRES_BIN, /usr/lib/postgresql/*/bin and $PATH). " +
        "Install Debian's server (apt-get install postgresql), point POSTGRES_BIN at its bin directory, " +
        "or set POSTGRES_URL to a running server (for example: npm run postgres).",
    );
  }
  return found;
}

/** The command line of a PostgreSQL binary, as the `postgres` user when we are root. */
function commandLine(bin: string, args: string[]): [string, string[]] {
  const asRoot = process.getuid?.() === 0;
  return asRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
}

/** Runs a PostgreSQL binary, as the `postgres` user when we are root. */
function run(bin: string, args: string[]): Promise<string> {
  const [file, argv] = commandLine(bin, args);
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error)
        reject(
          new Error(`${bin.split("/").pop()} failed: ${(stderr || stdout || error.message).trim()}`, { cause: error }),
        );
      else resolve(stdout);
    });
  });
}

/** {@link serverUser}'s answer, once looked up (two `id` processes). */
let postgresUser: { uid: number; gid: number } | undefined;

/** The user the server runs as: the `postgres` user when we are root (PostgreSQL refuses root), else us. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return (postgresUser ??= {
      uid: Number(execFileSync("id", ["-u", "postgres"]).toString().trim()),
      gid: Number(execFileSync("id", ["-g", "postgres"]).toString().trim()),
    });
  } catch (error) {
    throw new Error(
      "Running as root, but there is no 'postgres' user to run the server as (PostgreSQL refuses root). Install Debian's postgresql package, which creates it.",
      { cause: error },
    );
  }
}

/** Gives `dir` to the `postgres` user when we are root. */
function ownedByServer(dir: string): void {
  const user = serverUser();
  if (user) chownSync(dir, user.uid, user.gid);
}

/**
 * `template`, once checked to be a data directory the server's user made: its name in the shared
 * temporary directory is predictable, and a directory another user put there first (its
 * postgresql.conf can name a command or a library) would run as ours in every cluster copied from it.
 */
function trusted(template: string): string {
  const stat = lstatSync(template);
  const uid = serverUser()?.uid ?? process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o077) !== 0)
    throw new Error(
      `${template} is not a cluster template this user made (a directory of uid ${uid}, mode 0700): remove it.`,
    );
  return template;
}

/** What initdb is run with (the template's name changes with it). */
const INITDB_ARGS = ["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"];

/** The template being made by this process, per temporary directory and binary directory. */
const templates = new Map<string, Promise<string>>();

/**
 * A stopped cluster fresh from initdb, made once per PostgreSQL version and
 * copied for every throwaway cluster: initdb costs about 1.2-1.7 CPU-s (13-20 s
 * of wall time with the two cores loaded), a copy of its 39 MB 0.1 CPU-s
 * (1-3 s). Kept in the temporary directory, where the clusters are (the server's user
 * may not reach a checkout under a private home or a `mktemp -d`: a first version kept it in
 * node_modules/.cache, and a clone in a fresh temporary directory failed every PostgreSQL test), named after
 * the binaries' path, version and {@link INITDB_ARGS}; made in a directory of
 * its own and renamed into place, so a process that dies midway, or two that
 * make it at once, leave no half-made template behind. One found there is
 * copied only if it is the server's user's, mode 0700 (see `trusted`).
 */
export function clusterTemplate(bin: string): Promise<string> {
  const where = `${tmpdir()}\0${bin}`;
  let made = templates.get(where);
  if (!made) {
    made = makeTemplate(bin);
    templates.set(where, made);
    made.catch(() => templates.delete(where));
  }
  return made;
}

async function makeTemplate(bin: string): Promise<string> {
  const version = (await run(join(bin, "initdb"), ["--version"])).trim();
  const key = createHash("sha256")
    .update(JSON.stringify([bin, version, INITDB_ARGS, process.getuid?.()]))
    .digest("hex")
    .slice(0, 16);
  const template = join(tmpdir(), `lgidb-postgres-template-${key}`);
  if (existsSync(join(template, "PG_VERSION"))) return trusted(template);
  const making = mkdtempSync(`${template}-making-`);
  try {
    ownedByServer(making);
    await run(join(bin, "initdb"), ["-D", join(making, "data"), ...INITDB_ARGS]);
    try {
      renameSync(join(making, "data"), template);
    } catch (error) {
      // Another process put its own there first: the same files.
      if (!existsSync(join(template, "PG_VERSION"))) throw error;
    }
    return trusted(template);
  } finally {
    rmSync(making, { recursive: true, force: true });
  }
}

/** Copies a template's data directory, owner and modes kept (PostgreSQL refuses a data directory not its user's). */
function copyCluster(template: string, data: string): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile("cp", ["-a", template, data], { timeout: 60_000 }, (error, _stdout, stderr) =>
      error ? reject(new Error(`copying ${template} failed: ${stderr.trim() || error.message}`)) : resolve(),
    ),
  );
}

/** How a throwaway cluster runs. */
export interface PostgresOptions {
  /**
   * Commits are written to the operating system before they are
   * acknowledged (`synchronous_commit=on`; fsync stays off). A test that
   * crashes PostgreSQL (`kill`) needs it: with asynchronous commit, a crash
   * loses the last fraction of a second of acknowledged transactions, which
   * no production database does and which no client can recover from.
   */
  durableCommits?: boolean;
}

/** Creates and starts a throwaway cluster. */
export async function startPostgres(settings: PostgresOptions = {}): Promise<RunningPostgres> {
  const bin = findPostgresBin();
  const dir = mkdtempSync(join(tmpdir(), "lgidb-postgres-"));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    ownedByServer(dir);
    const data = join(dir, "data");
    await copyCluster(await clusterTemplate(bin), data);
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=${settings.durableCommits ? "on" : "off"} -c full_page_writes=off -c max_connections=50`;
      const start = ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-w", "-t", "30", "start"];
      try {
        await run(join(bin, "pg_ctl"), start);
      } catch (error) {
        lastError = error;
        continue; // the port was taken in between: try another
      }
      let stopped: Promise<void> | undefined;
      const immediateStop = ["-D", data, "-m", "immediate", "-w", "stop"];
      const [stopFile, stopArgs] = commandLine(join(bin, "pg_ctl"), immediateStop);
      return {
        url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
        stopCommand: [stopFile, ...stopArgs],
        dir,
        kill: () => run(join(bin, "pg_ctl"), immediateStop).then(() => undefined),
        restart: () => run(join(bin, "pg_ctl"), start).then(() => undefined),
        stop: () =>
          (stopped ??= run(join(bin, "pg_ctl"), immediateStop)
            .then(() => undefined)
            .catch(() => undefined)
            .finally(cleanup)),
      };
    }
    const log = existsSync(join(dir, "server.log")) ? readFileSync(join(dir, "server.log"), "utf8").slice(-2000) : "";
    throw new Error(`PostgreSQL did not start: ${String((lastError as Error)?.message ?? lastError)}\n${log}`);
  } catch (error) {
    cleanup();
    throw error;
  }
}

/**
 * Starts a cluster without waiting for it (for the globalSetup): the URL is
 * known only once it runs, so tests read it from `statusFile`.
 */
export function startPostgresInBackground(): { provided: ProvidedPostgres; stop(): Promise<void> } {
  const statusDir = mkdtempSync(join(tmpdir(), "lgidb-postgres-status-"));
  const statusFile = join(statusDir, "status");
  writeFileSync(statusFile, "starting");
  const starting = startPostgres().then(
    (server) => {
      writeFileSync(statusFile, `ready ${server.url}`);
      return server;
    },
    (error: unknown) => {
      writeFileSync(statusFile, `error: ${(error as Error)?.message ?? String(error)}`);
      return undefined;
    },
  );
  return {
    provided: { statusFile },
    async stop() {
      await (await starting)?.stop();
      rmSync(statusDir, { recursive: true, force: true });
    },
  };
}

/** Waits for a status file to say `ready <url>`. */
async function waitForStatus(statusFile: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = existsSync(statusFile) ? readFileSync(statusFile, "utf8") : "missing";
    if (status.startsWith("ready ")) return status.slice("ready ".length).trim();
    if (status.startsWith("error: ")) throw new Error(status.slice("error: ".length));
    if (Date.now() > deadline)
      throw new Error(`PostgreSQL did not start within ${timeoutMs / 1000} s (status: ${status}).`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The server for a test file: `POSTGRES_URL`, the globalSetup's, or one of
 * its own (then `release()` stops it). Throws a message saying what to install.
 */
export async function acquirePostgres(): Promise<{ url: string; release(): Promise<void> }> {
  if (process.env.POSTGRES_URL) return { url: process.env.POSTGRES_URL, release: async () => {} };
  const { inject } = await import("vitest");
  const provided = inject("postgres") as ProvidedPostgres | undefined;
  if (provided?.error) throw new Error(provided.error);
  if (provided?.url) return { url: provided.url, release: async () => {} };
  if (provided?.statusFile) return { url: await waitForStatus(provided.statusFile, 60_000), release: async () => {} };
  const server = await startPostgres();
  return { url: server.url, release: () => server.stop() };
}
