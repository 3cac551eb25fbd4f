/**
 * Setting up the server's database at start: the tables and the live-push
 * listener. A server started while PostgreSQL is down (a host rebooting, a
 * database restarting under an orchestrator) must not exit: it listens,
 * answers 503 with Retry-After, and tries again until the database answers.
 * Only an unreachable database is waited for; any other failure (a wrong
 * password, a missing permission) cannot mend itself, so it ends the wait.
 */
/// <reference types="node" />
import { isConnectionLost } from "./sql.js";

/** The first wait after a failed attempt, doubled after each until {@link MAX_RETRY_MS}. */
export const FIRST_RETRY_MS = 200;
/** The longest wait between two attempts: how late a server may notice its database is back. */
export const MAX_RETRY_MS = 2000;

/** The database setup of one server, attempted until it succeeds. */
export interface DatabaseStartup {
  /**
   * Resolves once setup succeeded; rejects with its error when it failed for
   * a reason other than an unreachable database, or when stopped first.
   */
  readonly ready: Promise<void>;
  /** `"waiting"` until setup ends, then `"ready"` or `"failed"`. */
  readonly state: "waiting" | "ready" | "failed";
  /** Stops trying (the server closes): `ready` rejects if it has not settled. */
  stop(): void;
}

/**
 * Runs `setUp` now, and again after each failure that {@link isConnectionLost}
 * recognises, calling `onWait` before each wait; without `onWait` the first
 * failure of any kind ends it (a caller that wants the error at once).
 */
export function startDatabase(
  setUp: () => Promise<void>,
  onWait?: (error: Error, retryInMs: number) => void,
): DatabaseStartup {
  let state: DatabaseStartup["state"] = "waiting";
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let wake: (() => void) | undefined;
  const ready = (async () => {
    for (let delay = FIRST_RETRY_MS; ; delay = Math.min(delay * 2, MAX_RETRY_MS)) {
      try {
        await setUp();
        if (stopped) throw new Error("The sync server closed before it reached its database.");
        state = "ready";
        return;
      } catch (error) {
        if (stopped || !onWait || !isConnectionLost(error)) {
          state = "failed";
          throw error;
        }
        onWait(error as Error, delay);
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, delay);
        });
        if (stopped) {
          state = "failed";
          throw new Error("The sync server closed before it reached its database.");
        }
      }
    }
  })();
  return {
    ready,
    get state() {
      return state;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      wake?.();
    },
  };
}
