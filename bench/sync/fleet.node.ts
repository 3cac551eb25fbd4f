/**
 * Sync load on loopback (issue 23, "Must show" 3), bounded in count and
 * time: simulated devices (plain HTTP clients speaking the protocol through
 * the package's own SyncTransport, no saver, so the server is what is
 * measured) against two sync server processes (the CLI, as deployed) on the
 * real PostgreSQL.
 *
 * - steady: DEVICES devices (two per user) × THREADS threads, each device
 *   running a round (push one turn, pull what its other device wrote) every
 *   5 s on average (exponential gaps), for SECONDS; every device also holds
 *   a long poll, from which the live-push delay is read (push sent → the
 *   other device's poll answered with it). Round p50/p99 against the goal
 *   (250 ms p99), each process's RSS over the run (flat within 10 %).
 * - burst: every device pushing turns back to back for BURST seconds, first
 *   through one process, then through both: checkpoints/s, and what the
 *   second process adds.
 * - before authentication: 16 MiB bodies of 2.4 M short msgpack keys without
 *   a token, sent while an authenticated /hello is timed every 20 ms: the
 *   slowest hello against the 50 ms goal.
 *
 * Size: SYNC_FLEET_DEVICES (200), SYNC_FLEET_THREADS (10), SYNC_FLEET_SECONDS
 * (30), SYNC_FLEET_BURST (8). Run by `npm run bench -- sync`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect, it } from "vitest";
import { Reaper } from "../../test/support/reaper.js";
import { bundleServer, ServerProcess } from "../../test/support/sync/convergence-server.js";
import { freePort } from "../../test/support/ports.js";
import { postgresUrl } from "../../test/support/sync/harness.js";
import { SyncTransport } from "../../src/sync/transport.js";
import { SYNC_MEDIA_TYPE, SYNC_PATH, SYNC_PROTOCOL_VERSION, type WireCheckpoint } from "../../src/sync/protocol.js";

const DEVICES = Number(process.env.SYNC_FLEET_DEVICES ?? 200);
const THREADS = Number(process.env.SYNC_FLEET_THREADS ?? 10);
const SECONDS = Number(process.env.SYNC_FLEET_SECONDS ?? 30);
const BURST = Number(process.env.SYNC_FLEET_BURST ?? 8);
const MEAN_GAP_MS = 5_000;
const APP = "fleet";

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resident set of a process (MB), from /proc. */
function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? NaN) / 1024;
}

const payload = (bytes: number) => {
  const value = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) value[i] = (i * 31 + bytes) & 0xff;
  // A msgpack bin 16 header, so the bytes are a valid msgpack value.
  return new Uint8Array([0xc5, bytes >> 8, bytes & 0xff, ...value]);
};
const EMPTY_MAP = new Uint8Array([0x80]);

/** One simulated device: its transport, its threads' heads, its cursors. */
class SimDevice {
  readonly heads = new Map<string, string | undefined>();
  cursor = 0;
  pollCursor = 0;
  turn = 0;
  constructor(
    readonly id: string,
    readonly user: string,
    public transport: SyncTransport,
  ) {
    for (let t = 0; t < THREADS; t++) this.heads.set(`${id}-t${t}`, undefined);
  }

  /** The next turn on one of its threads: a checkpoint on the thread's head, a 1 KB value, two writes. */
  nextTurn(): WireCheckpoint {
    const threads = [...this.heads.keys()];
    const threadId = threads[this.turn % threads.length]!;
    this.turn += 1;
    const parent = this.heads.get(threadId);
    const id = `1f${Date.now().toString(16).padStart(12, "0")}-${this.id}-${String(this.turn).padStart(8, "0")}`;
    this.heads.set(threadId, id);
    const checkpoint: WireCheckpoint = {
      thread_id: threadId,
      checkpoint_ns: "",
      checkpoint_id: id,
      checkpoint: ["msgpack", EMPTY_MAP],
      metadata: ["msgpack", EMPTY_MAP],
      channel_versions: { messages: this.turn },
      blobs: [{ channel: "messages", version: this.turn, value: ["msgpack", payload(1024)] }],
      writes: [0, 1].map((idx) => ({
        task_id: `task-${this.turn}`,
        idx,
        channel: "messages",
        task_path: "",
        value: ["msgpack", payload(128)] as WireCheckpoint["blobs"][number]["value"],
      })),
    };
    if (parent !== undefined) checkpoint.parent_checkpoint_id = parent;
    return checkpoint;
  }

  push(checkpoints: WireCheckpoint[]) {
    return this.transport.push({ v: SYNC_PROTOCOL_VERSION, device: this.id, checkpoints, deletes: [] });
  }

  async pullAll(): Promise<number> {
    let pulled = 0;
    for (;;) {
      const page = await this.transport.pull(this.cursor, 200, this.id);
      pulled += page.changes.length;
      this.cursor = page.cursor;
      if (!page.more) return pulled;
    }
  }
}

it(`sync load: ${DEVICES} devices × ${THREADS} threads through two server processes`, async () => {
  const reaper = new Reaper();
  const bundle = await bundleServer();
  const releaseBundle = reaper.hold({ remove: bundle.dir });
  const run = Date.now().toString(36);
  const users = Array.from({ length: DEVICES / 2 }, (_, i) => `fleet-${run}-${i}`);
  const databaseUrl = await postgresUrl();
  const servers = [
    new ServerProcess(await freePort(), bundle, databaseUrl, "fleet-one", reaper),
    new ServerProcess(await freePort(), bundle, databaseUrl, "fleet-two", reaper),
  ];
  const rows: { figure: string; ours: string; baseline: string; ratio: string }[] = [];
  const stop = new AbortController();
  let polls: Promise<void>[] = [];
  try {
    for (const server of servers) {
      await server.start(users);
      await server.ready();
    }
    const url = (i: number) => `http://127.0.0.1:${servers[i % 2]!.port}`;
    const transport = (user: string, i: number) =>
      new SyncTransport({ url: url(i), token: `token-of-${user}`, app: APP, timeoutMs: 60_000 });
    const devices = Array.from({ length: DEVICES }, (_, i) => {
      const user = users[Math.floor(i / 2)]!;
      return new SimDevice(`d${i}`, user, transport(user, i));
    });
    await Promise.all(devices.map((device) => device.transport.hello()));

    // Live-push delay: when each checkpoint was sent, and when the other device's poll brought it.
    const sentAt = new Map<string, number>();
    const delays: number[] = [];
    polls = devices.map(async (device) => {
      while (!stop.signal.aborted) {
        try {
          const page = await device.transport.pull(device.pollCursor, 200, device.id, {
            seconds: 25,
            signal: stop.signal,
          });
          const now = performance.now();
          device.pollCursor = page.cursor;
          for (const change of page.changes) {
            if (change.kind !== "checkpoint") continue;
            const at = sentAt.get(change.checkpoint.checkpoint_id);
            if (at !== undefined) delays.push(now - at);
          }
        } catch {
          if (!stop.signal.aborted) await sleep(100);
        }
      }
    });

    // Steady: a round per device every 5 s on average, for SECONDS.
    const rounds: number[] = [];
    let failures = 0;
    const rss: [number, number][] = [];
    const sampler = setInterval(() => rss.push([rssMb(servers[0]!.pid!), rssMb(servers[1]!.pid!)]), 1_000);
    const end = performance.now() + SECONDS * 1_000;
    await Promise.all(
      devices.map(async (device) => {
        // Spread the first rounds over one mean gap.
        await sleep(Math.random() * MEAN_GAP_MS);
        while (performance.now() < end) {
          const start = performance.now();
          try {
            const turn = device.nextTurn();
            sentAt.set(turn.checkpoint_id, start);
            await device.push([turn]);
            await device.pullAll();
            rounds.push(performance.now() - start);
          } catch {
            failures += 1;
          }
          await sleep(-Math.log(1 - Math.random()) * MEAN_GAP_MS);
        }
      }),
    );
    clearInterval(sampler);
    await sleep(500); // the last polls' answers
    const rate = rounds.length / SECONDS;
    const quarter = Math.max(1, Math.floor(rss.length / 4));
    const rssAt = (slice: [number, number][], i: 0 | 1) =>
      percentile(
        slice.map((s) => s[i]),
        50,
      );
    rows.push(
      {
        figure: `rounds (push + pull), ${rate.toFixed(1)}/s, p50 / p99`,
        ours: `${percentile(rounds, 50).toFixed(0)} / ${percentile(rounds, 99).toFixed(0)} ms`,
        baseline: "p99 < 250 ms (goal)",
        ratio: `${(percentile(rounds, 99) / 250).toFixed(2)}×`,
      },
      {
        figure: "live-push delay, p50 / p99",
        ours: `${percentile(delays, 50).toFixed(0)} / ${percentile(delays, 99).toFixed(0)} ms`,
        baseline: `${delays.length} delivered`,
        ratio: "",
      },
    );
    for (const i of [0, 1] as const) {
      const first = rssAt(rss.slice(1, quarter + 1), i);
      const last = rssAt(rss.slice(-quarter), i);
      rows.push({
        figure: `server ${i + 1} RSS, first → last quarter`,
        ours: `${first.toFixed(1)} → ${last.toFixed(1)} MB`,
        baseline: "within 10 % (goal)",
        ratio: `${(last / first).toFixed(3)}×`,
      });
    }
    rows.push({ figure: "failed rounds", ours: String(failures), baseline: String(rounds.length), ratio: "" });
    expect(rounds.length).toBeGreaterThan(0);

    // Burst: every device pushing back to back, through one process, then both.
    const burst = async (processes: number) => {
      for (const [i, device] of devices.entries()) device.transport = transport(device.user, processes === 1 ? 0 : i);
      let pushed = 0;
      const until = performance.now() + BURST * 1_000;
      await Promise.all(
        devices.map(async (device) => {
          while (performance.now() < until) {
            try {
              await device.push([device.nextTurn()]);
              pushed += 1;
            } catch {
              failures += 1;
            }
          }
        }),
      );
      return pushed / BURST;
    };
    const one = await burst(1);
    const two = await burst(2);
    rows.push({
      figure: "burst push, checkpoints/s",
      ours: `${two.toFixed(0)} (two processes)`,
      baseline: `${one.toFixed(0)} (one)`,
      ratio: `${(two / one).toFixed(2)}×`,
    });

    // Before authentication: hostile bodies without a token, while a signed-in hello is timed.
    const hostile = new Uint8Array(16 * 1024 * 1024);
    hostile.set([0xdf, 0x00, 0x24, 0x9f, 0x00]); // map32 of 2.4 M entries, then short keys
    for (let i = 5; i + 1 < hostile.length; i += 2) hostile.set([0xa1, 0x61], i);
    const probe = devices[0]!;
    probe.transport = transport(probe.user, 0);
    /** Times a signed-in hello every 20 ms until `until`. */
    const timeHellos = async (until: number) => {
      const times: number[] = [];
      while (performance.now() < until) {
        const start = performance.now();
        await probe.transport.hello();
        times.push(performance.now() - start);
        await sleep(20);
      }
      return times;
    };
    // The baseline: the same hellos with no hostile body in flight.
    const quiet = await timeHellos(performance.now() + 3_000);
    const hostileStatus: number[] = [];
    const hostileUntil = performance.now() + 3_200;
    let hellos: number[] = [];
    // Sent by curl in a process of its own, so the bodies' bytes do not delay this process's hellos.
    const file = join(mkdtempSync(join(tmpdir(), "fleet-")), "hostile.msgpack");
    writeFileSync(file, hostile);
    const sender = spawn("bash", [
      "-c",
      `end=$((SECONDS+3)); while [ $SECONDS -lt $end ]; do curl -s -o /dev/null -w '%{http_code}\\n' ` +
        `-H 'content-type: ${SYNC_MEDIA_TYPE}' --data-binary @${file} '${url(0)}${SYNC_PATH}/push?app=${APP}'; done`,
    ]);
    let out = "";
    sender.stdout.on("data", (chunk: Buffer) => void (out += chunk.toString()));
    const sent = new Promise((resolve) => sender.once("exit", resolve));
    await sleep(200); // the first body under way
    hellos = await timeHellos(hostileUntil);
    await sent;
    rmSync(dirname(file), { recursive: true, force: true });
    hostileStatus.push(...out.split("\n").filter(Boolean).map(Number));
    rows.push({
      figure: `signed-in hello beside ${hostileStatus.length} unauthenticated 16 MiB bodies, p50 / max`,
      ours: `${percentile(hellos, 50).toFixed(1)} / ${Math.max(...hellos).toFixed(1)} ms`,
      baseline: `${percentile(quiet, 50).toFixed(1)} / ${Math.max(...quiet).toFixed(1)} ms alone`,
      ratio: `${(percentile(hellos, 50) / percentile(quiet, 50)).toFixed(2)}× / ${(Math.max(...hellos) / Math.max(...quiet)).toFixed(2)}×`,
    });
    // Refused unread: 401, then 429 once the address is past its bad tokens a minute.
    expect([...new Set(hostileStatus)].filter((status) => status !== 401 && status !== 429)).toEqual([]);
    expect(hostileStatus[0]).toBe(401);
  } finally {
    stop.abort();
    await Promise.all(polls);
    await Promise.all(servers.map((server) => server.kill()));
    bundle.remove();
    releaseBundle();
    await reaper.close();
  }
  console.log(
    `bench:sync  ${"load on loopback".padEnd(60)}  ${"measured".padStart(22)}  ${"baseline".padStart(22)}  ratio`,
  );
  for (const r of rows)
    console.log(`bench:sync  ${r.figure.padEnd(60)}  ${r.ours.padStart(22)}  ${r.baseline.padStart(22)}  ${r.ratio}`);
}, 600_000);
