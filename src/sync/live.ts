/**
 * Live push on the client: one long poll (`pull` with `wait`) kept open
 * while the client runs, so another device's push reaches this one within
 * a notification and a round, not at the next interval. The poll only
 * learns that something is new; the round it triggers (serialized with the
 * client's other rounds) pulls and applies it. When the poll fails, or the
 * server answers at once with nothing (one that predates long polls ignores
 * `wait`), it backs off and the interval rounds carry on alone.
 */
import type { SyncTransport } from "./transport.js";
import { pause } from "../core/tasks.js";

/** Seconds a long poll waits (below the protocol's 30, so proxies' idle timeouts rarely cut it). */
export const LIVE_WAIT_SECONDS = 25;

/** Changes a poll asks for: it only tells news from none, the round reads them. */
const LIVE_LIMIT = 8;

/** What the long poll needs from its client. */
export interface LiveContext {
  transport: SyncTransport;
  /** Where this device's pulls stand: its cursor on the server and its device id. */
  position(): Promise<{ cursor: number; device: string }>;
  /** Runs a round after the client's others; resolves false when it failed (the client reports why). */
  round(): Promise<boolean>;
  /** Retry delay after `failures` failures in a row (jittered, capped). */
  backoff(failures: number): number;
  /** Ends the poll, the open request included. */
  signal: AbortSignal;
  /** Seconds each poll waits. Default {@link LIVE_WAIT_SECONDS}. */
  waitSeconds?: number;
}

/**
 * Keeps one long poll open until `ctx.signal` aborts, running a round
 * whenever the server answers with another device's change. Never rejects.
 */
export async function runLive(ctx: LiveContext): Promise<void> {
  const waitSeconds = ctx.waitSeconds ?? LIVE_WAIT_SECONDS;
  let failures = 0;
  // Past this sequence the server holds only this device's own changes, which
  // its pulls skip: polling from it waits for news instead of answering again.
  let ownUpTo = 0;
  const fail = async () => {
    failures += 1;
    await pause(ctx.backoff(failures), ctx.signal);
  };
  while (!ctx.signal.aborted) {
    let since: number;
    let started: number;
    let page;
    try {
      const { cursor, device } = await ctx.position();
      since = Math.max(cursor, ownUpTo);
      started = Date.now();
      page = await ctx.transport.pull(since, LIVE_LIMIT, device, { seconds: waitSeconds, signal: ctx.signal });
    } catch {
      if (ctx.signal.aborted) return;
      await fail();
      continue;
    }
    if (page.cursor === since) {
      // Nothing new. Long before the wait ends, the server did not wait at all.
      if (Date.now() - started < (waitSeconds * 1000) / 2) await fail();
      else failures = 0;
      continue;
    }
    failures = 0;
    if (page.changes.length === 0) {
      ownUpTo = page.cursor;
      continue;
    }
    if (!(await ctx.round())) await fail();
  }
}
