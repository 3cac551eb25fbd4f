/**
 * Apps on one server: each app (a request's `app`, by default the device
 * saver's `dbName`) replicates in a space of its own, so two apps of one
 * user with the same server and token never see each other's threads.
 *
 * A space is the user id every table is already keyed by: requests naming
 * no app (clients that predate apps) use the user's own id, the space that
 * holds whatever the server stored before apps existed; every other app uses
 * `<user>\u001f<app>`. The first app of a user to name itself claims the
 * user's own space (first wins, like the key record): the data a server
 * already holds keeps syncing for the app that wrote it, with no setting,
 * and older clients of that app keep sharing it.
 */
import type { Pool } from "pg";
import { SyncHttpError } from "./errors.js";
import { idempotent } from "./sql.js";

/** Separates a user from an app in a space id; no user id may hold it. */
export const SPACE_SEPARATOR = "\u001f";

/**
 * Longest user id (UTF-8 bytes) `authenticate` may return: with a thread id
 * it must fit one btree entry (2,704 bytes), and with an app name one
 * NOTIFY payload (8,000 bytes).
 */
export const MAX_USER_ID_BYTES = 1024;

/** The user an `lgsync_users` row's space belongs to, in SQL (indexed: the quota sums a user's spaces). */
export const OWNER_OF_ROW = "split_part(user_id, chr(31), 1)";

/**
 * Adds the column naming the app that claimed a user's own space, and the
 * index the quota's sum over a user's spaces reads; idempotent, under
 * setupSchema's lock. Each only when missing: ALTER TABLE and CREATE INDEX
 * lock the table even when there is nothing to do, and a start holding
 * that lock behind a push that holds a user's row deadlocks with it.
 */
export const APPS_SCHEMA = `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                 AND table_name = 'lgsync_users' AND column_name = 'app') THEN
    ALTER TABLE lgsync_users ADD COLUMN app text;
  END IF;
  IF to_regclass('lgsync_users_owner') IS NULL THEN
    CREATE INDEX lgsync_users_owner ON lgsync_users (${OWNER_OF_ROW});
  END IF;
END $$`;

/** The user a space belongs to. */
export function spaceOwner(space: string): string {
  const at = space.indexOf(SPACE_SEPARATOR);
  return at < 0 ? space : space.slice(0, at);
}

/** Where a request of `user` naming `app` reads and writes. */
export interface AppSpace {
  /** The id every query of the request is scoped by. */
  space: string;
  /** True when it is the user's own space (requests naming no app share it). */
  unscoped: boolean;
}

/**
 * Resolves requests' spaces. A claim never changes once made, so each
 * process remembers the claims it has read: one query per user and process.
 */
export class AppSpaces {
  readonly #pool: Pool;
  readonly #claims = new Map<string, string>();

  constructor(pool: Pool) {
    this.#pool = pool;
  }

  /** The space of `user`'s requests naming `app` (none: the user's own). */
  async resolve(user: string, app: string | undefined): Promise<AppSpace> {
    if (user.includes(SPACE_SEPARATOR))
      throw new SyncHttpError(
        500,
        "internal",
        "The server's authenticate() returned a user id holding U+001F, which the sync server keeps for app spaces.",
      );
    const bytes = new TextEncoder().encode(user).length;
    if (bytes > MAX_USER_ID_BYTES)
      throw new SyncHttpError(
        500,
        "internal",
        `The server's authenticate() returned a user id of ${bytes} bytes; the sync server stores at most ${MAX_USER_ID_BYTES} ` +
          "(PostgreSQL's NOTIFY and index entries carry it). Return a shorter id (a hash of the long one, say).",
      );
    if (app === undefined) return { space: user, unscoped: true };
    const claimed = this.#claims.get(user) ?? (await this.#claim(user, app));
    return claimed === app
      ? { space: user, unscoped: true }
      : { space: `${user}${SPACE_SEPARATOR}${app}`, unscoped: false };
  }

  /**
   * Lets `app` claim the user's own space if no app has; returns the app
   * that holds it. Run again on another connection when its pooled one
   * turns out dead (a database restart): the claim is idempotent, a second
   * run finds the row and keeps the app it holds, whichever run stored it.
   */
  async #claim(user: string, app: string): Promise<string> {
    const result = await idempotent<{ app: string }>(
      this.#pool,
      `INSERT INTO lgsync_users (user_id, app) VALUES ($1, $2)
       ON CONFLICT (user_id) DO UPDATE SET app = coalesce(lgsync_users.app, EXCLUDED.app)
       RETURNING app`,
      [user, app],
    );
    const claimed = result.rows[0]!.app;
    this.#claims.set(user, claimed);
    return claimed;
  }
}
