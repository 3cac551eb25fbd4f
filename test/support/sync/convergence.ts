/**
 * The seeded randomized convergence run of sync (the oracle style of
 * Jepsen and ElectricSQL): devices (IndexedDBSavers on separate
 * fake-indexeddb factories, each with a SyncClient behind its own cutting
 * proxy) run random operations chosen by a seeded PRNG, while faults hit
 * the network, the two server processes and PostgreSQL. The oracle checks
 * after every pulled page that each device's database is whole, and at
 * quiescence that every device and the server hold the same rows.
 *
 * A run is a function of its seed: the same seed replays the same
 * operations (`CONVERGENCE_SEED=n`). Where a connection is cut depends on
 * timing too, so a replay hits the same operations with the same faults
 * armed, not always the same byte.
 */
import { IDBFactory } from "fake-indexeddb";
import pg from "pg";
import { IndexedDBSaver } from "../../../src/saver/index.js";
import { EncryptedSerializer } from "../../../src/serde/encrypted/index.js";
import { SyncClient } from "../../../src/sync.js";
import { startPostgres, type RunningPostgres } from "../postgres.js";
import { Reaper } from "../reaper.js";
import { seeded } from "./harness.js";
import { bundleServer, freePort, ServerProcess, type ServerBundle } from "./convergence-server.js";
import {
  convergenceGraph,
  deviceInventory,
  Link,
  pageInvariants,
  replicatedLines,
  serverInventory,
  type Inventory,
  type Removals,
} from "./convergence-world.js";

/** What the runs share: one PostgreSQL of their own (it gets restarted) and two server processes. */
export interface ConvergenceWorld {
  postgres: RunningPostgres;
  pool: pg.Pool;
  servers: ServerProcess[];
  bundle: ServerBundle;
  /** Holds every process and directory of the world until `close()` has ended them. */
  reaper: Reaper;
  /** The user of a seed (fresh per world: a replay never meets an earlier run's rows). */
  userOf(seed: number): string;
  users: string[];
  /** True while a run has PostgreSQL stopped. */
  postgresDown: boolean;
  /** Brings PostgreSQL and both server processes back, whatever a run left stopped. */
  heal(): Promise<void>;
  /** Ends the servers, PostgreSQL and the bundle (each once, whatever a run left half-done). */
  close(): Promise<void>;
}

/**
 * Starts PostgreSQL and two sync server processes on it, knowing the users
 * of `seeds`. Whatever it starts is held by a {@link Reaper} from the
 * moment it exists: a start that fails, a run that throws past `close()`,
 * or a test process killed outright leaves no server and no database running.
 */
export async function startWorld(seeds: Iterable<number>): Promise<ConvergenceWorld> {
  const reaper = new Reaper();
  const cleanups: (() => Promise<void> | void)[] = [];
  const close = async () => {
    // Newest first: the servers go before their database, the bundle last.
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await reaper.close();
  };
  const bundling = bundleServer().then((bundle) => {
    const release = reaper.hold({ remove: bundle.dir });
    cleanups.push(() => (bundle.remove(), release()));
    return bundle;
  });
  try {
    // PostgreSQL is crashed on purpose: what it acknowledged must survive that, as in production.
    const postgres = await startPostgres({ durableCommits: true });
    const releasePostgres = [reaper.hold({ remove: postgres.dir }), reaper.hold({ run: postgres.stopCommand })];
    cleanups.push(async () => {
      await postgres.stop();
      for (const release of releasePostgres) release();
    });
    const bundle = await bundling;
    const pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
    pool.on("error", () => undefined); // PostgreSQL restarts on purpose
    cleanups.push(() => pool.end().catch(() => undefined));
    const run = Date.now().toString(36);
    const userOf = (seed: number) => `conv-${run}-${seed}`;
    const users = [...seeds].map(userOf);
    const servers = [
      new ServerProcess(await freePort(), bundle, postgres.url, "one", reaper),
      new ServerProcess(await freePort(), bundle, postgres.url, "two", reaper),
    ];
    cleanups.push(() => Promise.all(servers.map((server) => server.kill())).then(() => undefined));
    // The first creates the tables; the second then starts on them.
    await servers[0]!.start(users);
    await servers[1]!.start(users);
    const world: ConvergenceWorld = {
      postgres,
      pool,
      servers,
      bundle,
      reaper,
      userOf,
      users,
      postgresDown: false,
      async heal() {
        if (world.postgresDown) await postgres.restart();
        world.postgresDown = false;
        for (const server of servers) await server.start(users);
      },
      close,
    };
    return world;
  } catch (error) {
    await bundling.catch(() => undefined);
    await close();
    throw error;
  }
}

/** The operations a run draws from, with their weights. */
const OPS = {
  turn: 22,
  failTurn: 12,
  resume: 16,
  fork: 6,
  copy: 3,
  deleteThread: 3,
  deleteForRuns: 3,
  prune: 3,
  sync: 26,
  offline: 5,
  cut: 5,
  killServer: 2,
  restartPostgres: 1,
} as const;
type OpName = keyof typeof OPS;

/** How big a run is. */
export interface RunOptions {
  /** Operations before quiescence. */
  ops: number;
  /** Whether PostgreSQL may be restarted (it costs about a second). */
  postgresRestarts: boolean;
}

interface Device {
  index: number;
  dbName: string;
  factory: IDBFactory;
  saver: IndexedDBSaver;
  sync: SyncClient;
  link: Link;
  /** `thread\0ns\0id` removed by prune or deleteForRuns here, with the op index. */
  removed: Map<string, number>;
}

/** A failed run: its seed, what failed and the op log. */
export class ConvergenceFailure extends Error {
  constructor(
    readonly seed: number,
    problem: string,
    readonly log: string[],
    ops: number,
  ) {
    super(
      `Convergence seed ${seed} failed: ${problem}\nReplay: CONVERGENCE_SEED=${seed} CONVERGENCE_OPS=${ops} npx vitest run --project convergence\nOp log:\n${log.join("\n")}`,
    );
  }
}

const SALT = "convergence-salt-0001";

/** Tries of each device's first round (which must succeed: encrypted devices adopt the key in it). */
const FIRST_ROUND_ATTEMPTS = 3;

/** Runs one seed; throws {@link ConvergenceFailure} with the op log on any violation. */
export async function runSeed(world: ConvergenceWorld, seed: number, options: RunOptions): Promise<string[]> {
  const random = seeded(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const log: string[] = [];
  const fail = (problem: string): never => {
    throw new ConvergenceFailure(seed, problem, log, options.ops);
  };
  const encrypted = random() < 0.3;
  await world.heal();
  const user = world.userOf(seed);
  if (!world.users.includes(user)) throw new Error(`seed ${seed} was not given to startWorld`);
  const live = () => world.servers.filter((s) => s.alive).map((s) => s.port);
  const removals: Removals = { byThread: new Map() };
  const deletes: { thread: string; max: string }[] = [];
  /** Every value (`thread\0ns\0channel\0version`) any store was seen holding. */
  const knownBlobs = new Set<string>();
  const threads = ["t0", "t1", "t2"];
  const count = 3 + Math.floor(random() * 6);
  log.push(`seed ${seed}: ${count} devices, ${encrypted ? "encrypted" : "plain"} user ${user}`);

  const devices: Device[] = [];
  for (let index = 0; index < count; index++) {
    const link = new Link(live, seeded(seed * 1000 + index));
    await link.listen();
    const factory = new IDBFactory();
    const dbName = `device-${index}`;
    const serde = encrypted
      ? await EncryptedSerializer.fromPassphrase("convergence", {
          salt: SALT,
          iterations: 1000,
          insecureTestOnlyWeakKdf: true,
        })
      : undefined;
    const saver = new IndexedDBSaver({ dbName, indexedDB: factory, serde });
    const device: Device = { index, dbName, factory, saver, link, removed: new Map(), sync: undefined! };
    device.sync = new SyncClient({
      saver,
      url: link.url,
      token: `token-of-${user}`,
      // One app on every device, whose databases have names of their own.
      app: "convergence",
      batchSize: 2 + Math.floor(random() * 14),
      pullLimit: 3 + Math.floor(random() * 22),
      timeoutMs: 5000,
      // Before each pull the previous page is committed: check the database then.
      fetch: async (input, init) => {
        if (input.includes("/v1/pull")) await checkPage(device, "before a pull");
        return fetch(input, init);
      },
    });
    devices.push(device);
  }

  async function inventory(device: Device, full = false): Promise<Inventory> {
    const inv = await deviceInventory(device.factory, device.dbName, full);
    for (const blob of inv.blobs.keys()) knownBlobs.add(blob);
    return inv;
  }

  async function checkPage(device: Device, when: string, full = false): Promise<Inventory> {
    const inv = await inventory(device, full);
    const problems = pageInvariants(inv, removals, knownBlobs);
    for (const [key, at] of device.removed)
      // Removals replicate and a device remembers its own: not even a write another device added brings one back.
      if (inv.checkpoints.has(key))
        problems.push(`${key.replaceAll("\u0000", "|")}, removed here at op ${at}, came back`);
    if (problems.length > 0) fail(`device ${device.index} ${when}: ${problems.slice(0, 8).join("; ")}`);
    return inv;
  }

  /** One round; a retryable failure (a fault) is fine, any other is a finding. */
  async function round(device: Device): Promise<string> {
    try {
      const result = await device.sync.syncNow();
      return `pushed ${result.pushed}+${result.pushedDeletes}, pulled ${result.pulled}`;
    } catch (error) {
      if ((error as { retryable?: boolean }).retryable !== true)
        fail(`device ${device.index}: sync failed for good: ${(error as Error).message}`);
      return `failed (${(error as { code?: string }).code}: ${(error as Error).message.slice(0, 80)})`;
    } finally {
      await checkPage(device, "after a round");
    }
  }

  /** Runs a graph operation that should succeed or fail as `expected`. */
  async function graphOp(
    device: Device,
    work: () => Promise<unknown>,
    expected: "ok" | "fail" | "either",
  ): Promise<string> {
    let outcome = "ok";
    const failing = expected !== "ok";
    try {
      await work();
      if (expected === "fail") fail(`device ${device.index}: a failing tool did not fail the run`);
    } catch (error) {
      // Both tools failing in one step is an AggregateError of the two.
      const errors = error instanceof AggregateError ? (error.errors as Error[]) : [error as Error];
      if (!failing || !errors.every((e) => /failed \(on purpose\)/.test(e?.message))) throw error;
      outcome = "failed on purpose";
    }
    await inventory(device); // notes the values it wrote (knownBlobs)
    return outcome;
  }

  function noteRemoved(device: Device, before: Inventory, after: Inventory, thread: string, op: number): number {
    let n = 0;
    for (const [key, cp] of before.checkpoints) {
      if (cp.thread !== thread || after.checkpoints.has(key)) continue;
      device.removed.set(key, op);
      let set = removals.byThread.get(thread);
      if (!set) removals.byThread.set(thread, (set = new Set()));
      set.add(`${cp.ns}\0${cp.id}`);
      n += 1;
    }
    return n;
  }

  const config = (thread: string, extra: Record<string, unknown> = {}) => ({
    configurable: { thread_id: thread, ...extra },
  });
  const failSet = () => pick([["a"], ["b"], ["a", "b"]]);

  try {
    await drive();
  } finally {
    for (const device of devices) {
      device.sync.close();
      await device.saver.close();
      await device.link.close();
    }
  }
  return log;

  async function drive(): Promise<void> {
    // Encrypted devices adopt the user's key before writing: each syncs once, in turn.
    // A retryable failure (a request timed out on a loaded machine) is tried again, as a running
    // client would; round() fails the seed at once on any other.
    for (const device of devices) {
      let outcome = await round(device);
      for (let attempt = 1; attempt < FIRST_ROUND_ATTEMPTS && outcome.startsWith("failed"); attempt++)
        outcome = await round(device);
      if (outcome.startsWith("failed"))
        fail(`device ${device.index}: first round failed ${FIRST_ROUND_ATTEMPTS} times, last ${outcome}`);
    }

    const weights = Object.entries(OPS).filter(([name]) => options.postgresRestarts || name !== "restartPostgres");
    const total = weights.reduce((sum, [, w]) => sum + w, 0);
    let postgresDownUntil = -1;
    const serverBackAt = new Map<ServerProcess, number>();
    for (let op = 0; op < options.ops; op++) {
      // Scheduled recoveries first.
      for (const [server, at] of serverBackAt)
        if (op >= at) {
          await server.start(world.users);
          serverBackAt.delete(server);
          log.push(`#${op} server :${server.port} restarted`);
        }
      if (postgresDownUntil >= 0 && op >= postgresDownUntil) {
        await world.heal();
        postgresDownUntil = -1;
        log.push(`#${op} postgres restarted`);
      }
      const opStarted = performance.now();
      let r = random() * total;
      const name = weights.find(([, w]) => (r -= w) < 0)![0] as OpName;
      const device = pick(devices);
      const thread = pick(threads);
      const graph = convergenceGraph(device.saver);
      let line = `#${op} d${device.index} ${name}`;
      switch (name) {
        case "turn":
          line += ` ${thread}: ${await graphOp(device, () => graph.invoke({ log: [`u${op}`] }, config(thread)), "ok")}`;
          break;
        case "failTurn": {
          const fails = failSet();
          line += ` ${thread} fail=${fails.join("")}: ${await graphOp(device, () => graph.invoke({ log: [`u${op}`] }, config(thread, { fail: fails })), "fail")}`;
          break;
        }
        case "resume": {
          // A thread whose head here holds a failed step, so resumes meet (the findings were there).
          const failed: string[] = [];
          for (const candidate of threads) {
            const head = await device.saver.getTuple(config(candidate));
            if (head?.pendingWrites?.some(([, channel]) => channel === "__error__")) failed.push(candidate);
          }
          const fails = pick([[], ["a"], ["b"]]);
          if (failed.length === 0) {
            line += ": nothing to resume";
            break;
          }
          const at = pick(failed);
          // The named tool fails only if its task is among those still to run: either outcome is fine.
          line += ` ${at} fail=${fails.join("") || "-"}: ${await graphOp(device, () => graph.invoke(null, config(at, { fail: fails })), fails.length > 0 ? "either" : "ok")}`;
          break;
        }
        case "fork": {
          const ids: string[] = [];
          // Root checkpoints only: a subgraph's id given as the root's parent names no root checkpoint.
          for await (const t of device.saver.list(config(thread)))
            if (t.config.configurable?.checkpoint_ns === "") ids.push(t.checkpoint.id);
          if (ids.length === 0) {
            line += ` ${thread}: empty`;
            break;
          }
          const at = pick(ids.sort());
          line += ` ${thread}@${at}: ${await graphOp(device, () => graph.invoke({ log: [`f${op}`] }, config(thread, { checkpoint_id: at })), "ok")}`;
          break;
        }
        case "copy": {
          const target = `c${op}`;
          const before = await inventory(device);
          await device.saver.copyThread(thread, target);
          // A copy carries the source's holes: what was removed there is removed here too.
          const holes = removals.byThread.get(thread);
          if (holes) removals.byThread.set(target, new Set(holes));
          threads.push(target);
          line += ` ${thread} -> ${target} (${[...before.checkpoints.values()].filter((c) => c.thread === thread).length} checkpoints)`;
          break;
        }
        case "deleteThread": {
          const before = await inventory(device);
          const ids = [...before.checkpoints.values()].filter((c) => c.thread === thread).map((c) => c.id);
          await device.saver.deleteThread(thread);
          const max = ids.sort().at(-1);
          if (max !== undefined) deletes.push({ thread, max });
          line += ` ${thread} (up to ${max ?? "nothing"})`;
          break;
        }
        case "deleteForRuns":
        case "prune": {
          const before = await inventory(device);
          const runs = [...before.checkpoints.values()]
            .filter((c) => c.thread === thread && c.runId)
            .map((c) => c.runId!);
          if (name === "prune") await device.saver.prune([thread], { keepLast: 1 + Math.floor(random() * 2) });
          else if (runs.length > 0)
            await device.saver.deleteForRuns([pick([...new Set(runs)].sort())], { threadId: thread });
          const removed = noteRemoved(device, before, await inventory(device), thread, op);
          line += ` ${thread}: removed ${removed}`;
          break;
        }
        case "sync":
          line += `: ${await round(device)}`;
          break;
        case "offline":
          device.link.setOffline(!device.link.offline);
          line += ` -> ${device.link.offline ? "offline" : "online"}`;
          break;
        case "cut":
          device.link.cutChance = device.link.cutChance > 0 ? 0 : 0.3 + random() * 0.5;
          line += ` -> cut chance ${device.link.cutChance.toFixed(2)}`;
          break;
        case "killServer": {
          const server = pick(world.servers);
          if (!server.alive) break;
          // Mid-round: the kill lands while this device's round is in flight.
          const syncing = round(device);
          await new Promise((done) => setTimeout(done, random() * 30));
          await server.kill();
          serverBackAt.set(server, op + 1 + Math.floor(random() * 4));
          line += ` :${server.port} mid-round, round ${await syncing}`;
          break;
        }
        case "restartPostgres": {
          if (postgresDownUntil >= 0) break;
          const syncing = round(device);
          await new Promise((done) => setTimeout(done, random() * 30));
          await world.postgres.kill();
          world.postgresDown = true;
          postgresDownUntil = op + 1 + Math.floor(random() * 3);
          line += ` mid-round, round ${await syncing}`;
          break;
        }
      }
      const took = performance.now() - opStarted;
      log.push(took > 1000 ? `${line} (${Math.round(took)} ms)` : line);
      for (const server of world.servers)
        if (server.crashes.length > 0) fail(`server :${server.port} exited by itself:\n${server.crashes.join("\n")}`);
    }

    // Quiescence: every fault healed, every device online, rounds until nothing moves.
    log.push("quiescence");
    await world.heal();
    for (const device of devices) {
      device.link.setOffline(false);
      device.link.cutChance = 0;
    }
    for (let pass = 0; pass < 2; pass++)
      for (const device of devices) {
        let outcome = await round(device);
        // A PostgreSQL just restarted may answer 503 once more.
        for (let retry = 0; outcome.startsWith("failed") && retry < 20; retry++) {
          await new Promise((done) => setTimeout(done, 100));
          outcome = await round(device);
        }
        log.push(`  pass ${pass} d${device.index}: ${outcome}`);
        if (outcome.startsWith("failed")) fail(`device ${device.index} could not sync at quiescence`);
      }
    await checkQuiescence();

    async function checkQuiescence(): Promise<void> {
      const server = await serverInventory(world.pool, user);
      for (const blob of server.blobs.keys()) knownBlobs.add(blob);
      if (!server.uniqueSeq) fail("two server rows share a sequence number");
      const expected = replicatedLines(server);
      const problems = pageInvariants(server, removals, knownBlobs);
      if (problems.length > 0) fail(`the server: ${problems.slice(0, 8).join("; ")}`);
      for (const { thread, max } of deletes)
        for (const cp of server.checkpoints.values())
          if (cp.thread === thread && cp.id <= max)
            fail(`deleted ${thread}|${cp.ns}|${cp.id} (<= ${max}) is back on the server`);
      let reference: { device: number; states: Map<string, unknown> } | undefined;
      // Threads whose history some device removed on its own: their heads may differ today.
      const pruned = new Set(devices.flatMap((d) => [...d.removed.keys()].map((key) => key.split("\0")[0]!)));
      for (const device of devices) {
        const inv = await checkPage(device, "at quiescence", true);
        // Removals replicate whatever the device knew of the server: every store holds the same set.
        const lines = replicatedLines(inv);
        const missing = [...expected].filter(([key, line]) => lines.get(key) !== line).map(([, line]) => line);
        const extra = [...lines].filter(([key, line]) => expected.get(key) !== line).map(([, line]) => line);
        if (missing.length > 0 || extra.length > 0)
          fail(
            `device ${device.index} differs from the server:\n  missing: ${missing.slice(0, 6).join("\n    ")}\n  extra: ${extra.slice(0, 6).join("\n    ")}`,
          );
        // Same head per namespace, as the saver reads it, and the same state.
        const graph = convergenceGraph(device.saver);
        const states = new Map<string, unknown>();
        const heads = new Map<string, string>();
        for (const cp of inv.checkpoints.values()) {
          const key = `${cp.thread}\0${cp.ns}`;
          if ((heads.get(key) ?? "") < cp.id) heads.set(key, cp.id);
        }
        for (const [key, id] of heads) {
          const [thread, ns] = key.split("\0") as [string, string];
          const tuple = await device.saver.getTuple(config(thread, { checkpoint_ns: ns }));
          if (tuple?.checkpoint.id !== id)
            fail(`device ${device.index}: head of ${thread}|${ns} is ${tuple?.checkpoint.id}, not ${id}`);
          if (ns !== "" || pruned.has(thread)) continue;
          const snapshot = await graph.getState(config(thread));
          states.set(thread, {
            values: snapshot.values,
            next: snapshot.next,
            id: snapshot.config.configurable?.checkpoint_id,
            tasks: snapshot.tasks.map((t) => [t.name, t.error !== undefined]),
          });
        }
        if (reference === undefined) reference = { device: device.index, states };
        else if (JSON.stringify([...states]) !== JSON.stringify([...reference.states]))
          fail(`getState differs between devices ${reference.device} and ${device.index}`);
      }
      log.push(`converged: ${expected.size} checkpoints on ${devices.length} devices and the server`);
    }
  }
}
