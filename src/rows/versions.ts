/**
 * Channel versions that stay unique across forks.
 *
 * A saver that stores one value per channel version (as this one and the
 * Postgres saver do) keys values by `(channel, version)`. With plain integer
 * versions two branches forked from one checkpoint both write version n+1 of
 * a channel, and the second overwrites (or is silently dropped in favour of)
 * the first: the fork corruption reported against PostgresSaver.
 *
 * Versions here are numbers: the integer part counts updates, as LangGraph's
 * default does, and a random fraction of 30 bits tells branches apart. Numbers
 * (not strings) keep threads portable: savers that use the base
 * `getNextVersion` (SQLite, Postgres, MemorySaver) accept a numeric current
 * version and keep counting from it after an import, while a string version
 * makes them throw. Every value is exactly representable (a 23-bit counter
 * plus 30 fraction bits fits a double's 53), so `<` orders them exactly and
 * they survive JSON.
 */

/** Number of distinct branch tags: one collision in about a billion forks. */
const FRACTION_STEPS = 2 ** 30;

/** The integer part of any version a saver may have written. */
function counterOf(current: string | number | undefined): number {
  if (current === undefined) return 0;
  if (typeof current === "number") return Math.floor(current);
  // String versions of other savers ("00000000000000000000000000000005.123…").
  const counter = Number.parseInt(current.split(".")[0] ?? "", 10);
  return Number.isFinite(counter) ? counter : 0;
}

/** A random integer in [1, FRACTION_STEPS), from WebCrypto when present. */
function randomBranchTag(): number {
  const cryptoApi = (globalThis as { crypto?: Crypto }).crypto;
  if (cryptoApi?.getRandomValues) {
    const [word] = cryptoApi.getRandomValues(new Uint32Array(1));
    return (word! % (FRACTION_STEPS - 1)) + 1;
  }
  return Math.floor(Math.random() * (FRACTION_STEPS - 1)) + 1;
}

/**
 * The version after `current`: one more in the integer part, a fresh random
 * branch tag in the fraction.
 */
export function nextChannelVersion(current: string | number | undefined): number {
  return counterOf(current) + 1 + randomBranchTag() / FRACTION_STEPS;
}
