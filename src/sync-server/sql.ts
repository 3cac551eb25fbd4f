/**
 * What the sync server's reads and writes share on PostgreSQL: a
 * transaction on one pooled connection, the error classes that tell a lost
 * connection or data the tables cannot hold from a bug, and the SQL that
 * weighs a row or names a checkpoint.
 */
/// <reference types="node" />
import type { Pool, PoolClient, QueryResult, QueryResultRow } from "pg";

/**
 * Connections that answered a statement of {@link transaction} or
 * {@link read}: one of them found dead at a request's first statement was
 * dropped by the database since (a restart), not refused by it now.
 */
const answered = new WeakSet<PoolClient>();

/**
 * Runs `work` in a transaction on one pooled connection. A connection the
 * database drops while it is checked out (a restart between two queries)
 * emits `error` with no query to take it, and the pool listens only while a
 * connection is idle: without a listener here that event would end the
 * process. The broken connection is destroyed, not returned to the pool.
 *
 * A pooled connection found dead at `begin` (the database restarted since
 * it answered last, and its notice was lost or is still on its way) ran
 * nothing of the request: the transaction is tried again on another
 * connection, until one made since fails as well (the database is down:
 * the request's 503). Nothing is tried again once `begin` succeeded: what
 * failed after may have committed.
 */
export function transaction<R>(pool: Pool, begin: string, work: (client: PoolClient) => Promise<R>): Promise<R> {
  return onConnection(
    pool,
    (client) => client.query(begin),
    async (client) => {
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    },
  );
}

/**
 * Runs one read-only `text` (a SELECT: it commits nothing) on a pooled
 * connection, and again on another when the connection turns out dead, as
 * {@link transaction} does with its `begin`: a read may always be asked again.
 */
export function read<R extends QueryResultRow>(pool: Pool, text: string, values: unknown[]): Promise<QueryResult<R>> {
  return idempotent(pool, text, values);
}

/**
 * Runs one statement `text` on its own (it commits as it ends) that leaves
 * the same rows and answers the same however many times it runs (an upsert
 * whose conflict keeps what the first run stored), as {@link read} runs a
 * read: again on another connection when its pooled one turns out dead at
 * it. A connection that died after the statement committed and before its
 * answer came is told apart from one that died before it by nothing the
 * client sees: only such a statement may be sent again.
 */
export function idempotent<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: unknown[],
): Promise<QueryResult<R>> {
  return onConnection(
    pool,
    (client) => client.query<R>(text, values),
    async (_, result) => result,
  );
}

/**
 * `first` (a statement that commits nothing), then `rest` on one pooled
 * connection (see {@link transaction}); a failure after `first` rolls back
 * whatever transaction is open.
 */
async function onConnection<F, R>(
  pool: Pool,
  first: (client: PoolClient) => Promise<F>,
  rest: (client: PoolClient, first: F) => Promise<R>,
): Promise<R> {
  for (;;) {
    const client = await pool.connect();
    const stale = answered.has(client);
    let begun = false;
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken ??= error;
    };
    client.on("error", onError);
    try {
      const answer = await first(client);
      begun = true;
      answered.add(client);
      return await rest(client, answer);
    } catch (error) {
      broken ??= isConnectionLost(error) ? (error as Error) : undefined;
      if (!broken && begun) await client.query("ROLLBACK").catch(() => undefined);
      // Dead before it ran anything: another connection, until one made since fails too (the database down).
      if (broken && stale && !begun) continue;
      throw error;
    } finally {
      client.off("error", onError);
      client.release(broken);
    }
  }
}

/** Listens to a pooled connection's `error` so that nobody listening cannot end the process: see {@link surviveLostConnections}. */
function ignoreLostConnection(): void {}

/**
 * Keeps the database dropping `pool`'s connections (a restart) from ending
 * the process. pg-pool listens to an idle connection's `error` (and emits it
 * as the pool's: ignored here), and whoever checks one out must listen
 * while it holds it, as {@link transaction} does; but between the two a
 * connection has no listener. pg reads a query's last answer and the
 * termination notice after it in one chunk: the answer releases the
 * connection, the pool hands it at once to a transaction waiting for one,
 * which listens only a moment later, and pg emits the notice between the
 * two, with nobody listening (a PostgreSQL restart with requests queued for
 * connections ended the server). So every connection gets a listener of
 * its own when first checked out. Losing the event loses nothing: pg marks
 * the connection unusable all the same, its next query fails as a lost
 * connection (503), and the pool drops it when it comes back.
 */
export function surviveLostConnections(pool: Pool): void {
  pool.on("error", ignoreLostConnection);
  pool.on("acquire", (client) => {
    if (!client.listeners("error").includes(ignoreLostConnection)) client.on("error", ignoreLostConnection);
  });
}

/**
 * PostgreSQL error classes that mean "the database is (re)starting or
 * unreachable", not "this request is wrong": connection exceptions (08),
 * a session terminated (57P01), a crash shutdown (57P02), a database
 * starting or stopping (57P03), an idle session timed out (57P05), too many
 * connections (53300). Not 57P04 (the database was dropped): that does
 * not mend itself.
 */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[1235]|53300)/;

/**
 * Node's socket errors of a database gone or out of reach: refused, reset,
 * cut, timed out, no route to its host or network, its name not resolved
 * for now (EAI_AGAIN; not ENOTFOUND, a name that does not exist).
 */
const UNAVAILABLE_ERRNO =
  /^E(CONNREFUSED|CONNRESET|CONNABORTED|PIPE|TIMEDOUT|HOSTUNREACH|HOSTDOWN|NETUNREACH|NETDOWN|AI_AGAIN)$/;

/**
 * Whether `error` says the database went away or is not there yet (a
 * restart, a failover, too many connections), or that no pooled connection
 * came free within the pool's `connectionTimeoutMillis` (connections hang
 * while a database host is down): the request was not applied, and the
 * same request may succeed in a moment.
 */
export function isConnectionLost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as Error & { code?: unknown }).code;
  if (typeof code === "string" && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.test(code))) return true;
  // "timeout expired": pg's own connectionTimeoutMillis, a host that does not answer (a network down).
  return /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect|^timeout expired$/i.test(
    error.message,
  );
}

/**
 * PostgreSQL error classes that mean "this request holds what the tables
 * cannot": a data exception (a value out of a column's range, U+0000 in
 * text) or a program limit (a key over the 2704 bytes a btree index entry
 * may take, which ids of 1,024 characters can pass once multi-byte).
 * Sent again, the same request fails the same way.
 */
const UNSTORABLE_SQLSTATE = /^(22|54)[0-9A-Z]{3}$/;

/** Whether `error` is PostgreSQL refusing the request's own data (see {@link UNSTORABLE_SQLSTATE}). */
export function isUnstorable(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const { code, severity } = error as Error & { code?: unknown; severity?: unknown };
  return typeof code === "string" && typeof severity === "string" && UNSTORABLE_SQLSTATE.test(code);
}

/**
 * What a checkpoint row weighs on the wire, in SQL on the row `alias`: its
 * values and what else a pull sends of it at a size the client chooses
 * (channel versions, parent write keys). The checkpoint cap and a pull
 * page's budget count it, so neither can be passed with bytes that are not
 * values.
 */
export function checkpointBytes(alias: string): string {
  return `(octet_length(${alias}.checkpoint) + octet_length(${alias}.metadata) + octet_length(${alias}.channel_versions)
    + coalesce(octet_length(${alias}.parent_writes), 0))`;
}

/** What a pending write row `alias` weighs on the wire: its value and its ids. */
export function writeBytes(alias: string): string {
  return `(octet_length(${alias}.value) + octet_length(${alias}.task_id) + octet_length(${alias}.channel)
    + octet_length(${alias}.task_path))`;
}

/**
 * An SQL expression on the text `column` whose "C" order is the devices'
 * order of ids: by UTF-16 code unit (JavaScript's `<`, IndexedDB's key
 * order), where PostgreSQL orders UTF-8 text by code point, putting a
 * character of U+E000-U+FFFF before one above U+FFFF (a surrogate pair
 * first in UTF-16). Its UTF-8 bytes as hex pairs, each followed by a space
 * (so a match stays on a whole byte), with the lead bytes of U+E000-U+FFFF
 * (0xEE, 0xEF) raised above those of four-byte characters (0xF0-0xF4);
 * continuation bytes (0x80-0xBF) are never either.
 */
export function utf16Order(column: string): string {
  return `(${raisedPairs(column)} COLLATE "C")`;
}

/** The hex pairs of {@link utf16Order}, each followed by a space, the lead bytes of U+E000-U+FFFF raised. */
function raisedPairs(column: string): string {
  const pairs = `regexp_replace(encode(convert_to(${column}, 'UTF8'), 'hex'), '(..)', '\\1 ', 'g')`;
  return `replace(replace(${pairs}, 'ee ', 'f5 '), 'ef ', 'f6 ')`;
}

/**
 * The SQL function whose value on an id orders as {@link utf16Order} does,
 * as bytes: the id's UTF-8 bytes with the same two lead bytes raised, no
 * longer than the id (an index entry of it fits where the primary key's
 * does; one of utf16Order's text, three times the bytes, could pass the 2704
 * a btree entry may take). A function, not the expression, because an index
 * needs an immutable one and `convert_to` is only stable (its encoding is
 * named here, so its result never changes). An index keeps the values it
 * computed: the body under a name never changes, a new body takes a new
 * version in the name.
 */
export const UTF16_KEY_FUNCTION = "lgsync_utf16_key_v1";

/** The statement creating {@link UTF16_KEY_FUNCTION} (run only where it is missing: see schema.ts). */
export const UTF16_KEY_DEFINITION = `CREATE FUNCTION ${UTF16_KEY_FUNCTION}(id text) RETURNS bytea
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $key$ SELECT decode(replace(${raisedPairs("id")}, ' ', ''), 'hex') $key$`;

/** {@link UTF16_KEY_FUNCTION} on the text `column`: a key an index holds, in the devices' order of ids. */
export function utf16Key(column: string): string {
  return `${UTF16_KEY_FUNCTION}(${column})`;
}

/** A checkpoint's identity within a user. */
export function cpKey(threadId: string, ns: string, id: string): string {
  return `${threadId}\u0000${ns}\u0000${id}`;
}
