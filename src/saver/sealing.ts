/**
 * The serializer a saver binds values to rows with, for a store kept beside
 * its database that seals its own values with it: the local agent server's
 * run events (agent-server/event-seal.ts). Reached through the saver's
 * registered context (registry.ts), like saver/syncing.ts, so the class
 * carries no method for it (the root entry stays as it was) and a
 * look-alike saver is refused.
 */
import { isRowBound, type RowBoundSerializer } from "../serde/protocol.js";
import { contextOf } from "./registry.js";

/**
 * The serializer bound to `saver`'s database when it binds values to rows
 * (an `EncryptedSerializer`'s; a wrong key rejects here); undefined when it
 * does not (a plain saver), or `saver` is no `IndexedDBSaver`. Asked at each
 * use: a key change binds it anew. @internal
 */
export async function rowSerdeOf(saver: unknown): Promise<RowBoundSerializer | undefined> {
  const ctx = contextOf(saver);
  const serde = ctx && (await ctx.serde());
  return serde && isRowBound(serde) ? serde : undefined;
}
