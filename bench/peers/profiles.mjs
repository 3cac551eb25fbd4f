// The peers bench's figures that need a browser profile per saver (run by
// bench/run.mjs after the page's suite): each long-chat saver grows a
// 200-turn chat in a fresh profile of its own (cold.html?do=seed), then
//  - bytes on disk: the sizes of the files under the profile's storage
//    directories (IndexedDB's LevelDB and blob files, OPFS's files) once the
//    browser is closed, less those of a profile that loaded the page and
//    wrote nothing; beside it navigator.storage.estimate() in that profile,
//    where no other database can move it;
//  - cold start: a new page in that profile (the browser still running, as a
//    returning user's) to its first getState, timed from navigation start and
//    from the page's first script, in alternating rounds, medians;
//  - bytes on disk again once the savers in GROWN have grown the same chat to
//    LONG_TURNS. At 200 turns IndexedDB's figure is mostly LevelDB's log,
//    which holds every write uncompressed until it reaches its write buffer
//    (a few MiB) and becomes a compressed table: the 200-turn figure rises
//    and falls with where the log stands (fewer bytes written can read
//    larger, when no flush came; docs/benchmarks.md), the long one is what a
//    profile keeps.
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SAVERS = ["ours", "sqlite", "keyval"];
const TURNS = 200;
// The savers grown to LONG_TURNS: those that read their storage (the pattern
// dumps its whole state after every write, so its time grows with the square
// of the turns).
const GROWN = ["ours", "sqlite"];
const LONG_TURNS = 1000;
const ROUNDS = 5;
// Where Chromium keeps an origin's IndexedDB, OPFS and storage-bucket files in a profile.
const STORAGE_DIRS = ["IndexedDB", "File System", "WebStorage", "blob_storage"];

/** Sum of the sizes of the files under `dir` (0 when it does not exist). */
function treeBytes(dir) {
  let total = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

const storageBytes = (profile) =>
  STORAGE_DIRS.reduce((sum, name) => sum + treeBytes(join(profile, "Default", name)), 0);

/** Loads `url` in a new page of `context`, waits for its result, closes the page. */
async function visit(context, url) {
  const page = await context.newPage();
  try {
    await page.goto(url);
    const handle = await page.waitForFunction(() => globalThis.__peers, undefined, { timeout: 10 * 60_000 });
    const result = await handle.jsonValue();
    if (result.error) throw new Error(`${url}: ${result.error}`);
    return result;
  } finally {
    await page.close();
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const ms = (v) => (v >= 100 ? `${v.toFixed(0)} ms` : `${v.toFixed(2)} ms`);
const kib = (v) => (v >= 1 << 20 ? `${(v / (1 << 20)).toFixed(2)} MiB` : `${(v / 1024).toFixed(1)} KiB`);

/** Rows of one figure, as the page's suite prints them: ours / each peer, the goal on the fastest. */
function figureRows(figure, values, names, format) {
  const [ours, ...peers] = values;
  const fastest = Math.min(...peers);
  console.log(`bench: ${figure}: ${values.map((v, i) => `${names[i]} ${format(v)}`).join(", ")}`);
  return peers.map((peer, i) => {
    const ratio = ours / peer;
    const goal = peer === fastest ? { goal: "≤ 1×", ok: ratio <= 1 } : {};
    return {
      suite: "peers",
      name: figure,
      ours: format(ours),
      baseline: format(peer),
      baselineName: names[i + 1],
      ratio: `${ratio.toFixed(2)}×`,
      ...goal,
    };
  });
}

/**
 * The per-profile figures of the savers in SAVERS at `origin` (the bench's
 * server), each browser from `launch(profileDir)` (a persistent context).
 */
export async function profileFigures(origin, launch) {
  const page = (query) => `${origin}/peers/cold.html?${query}`;
  const profiles = SAVERS.map(() => mkdtempSync(join(tmpdir(), "lg-idb-peers-profile-")));
  const empty = mkdtempSync(join(tmpdir(), "lg-idb-peers-profile-"));
  try {
    let context = await launch(empty);
    const { usage: emptyUsage } = await visit(context, page(""));
    await context.close();
    const emptyBytes = storageBytes(empty);
    const names = [];
    const onDisk = [];
    const estimated = [];
    for (const [i, saver] of SAVERS.entries()) {
      context = await launch(profiles[i]);
      const seeded = await visit(context, page(`saver=${saver}&do=seed&turns=${TURNS}`));
      await context.close();
      names.push(seeded.name);
      onDisk.push(storageBytes(profiles[i]) - emptyBytes);
      estimated.push(seeded.usage - emptyUsage);
      console.log(`bench: ${seeded.name}: ${TURNS} turns in ${ms(seeded.seedMs)} (its own profile)`);
    }
    const contexts = [];
    for (const profile of profiles) contexts.push(await launch(profile));
    const cold = async (i) => visit(contexts[i], page(`saver=${SAVERS[i]}&do=cold&turns=${TURNS}`));
    // One load each first, not counted: the profile's first load of the page after launch fills
    // its HTTP and code caches, which a returning user's page finds filled.
    for (const i of SAVERS.keys()) await cold(i);
    const fromNavigation = SAVERS.map(() => []);
    const fromFirstScript = SAVERS.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < SAVERS.length; k++) {
        const i = (k + round) % SAVERS.length;
        const result = await cold(i);
        fromNavigation[i].push(result.fromNavigation);
        fromFirstScript[i].push(result.fromFirstScript);
      }
    }
    for (const c of contexts) await c.close();
    const grown = [];
    for (const [i, saver] of SAVERS.entries()) {
      if (!GROWN.includes(saver)) continue;
      context = await launch(profiles[i]);
      const more = LONG_TURNS - TURNS;
      const seeded = await visit(context, page(`saver=${saver}&do=seed&from=${TURNS}&turns=${more}`));
      await context.close();
      grown.push(storageBytes(profiles[i]) - emptyBytes);
      console.log(`bench: ${seeded.name}: ${more} turns more in ${ms(seeded.seedMs)} (its own profile)`);
    }
    return [
      ...figureRows(
        `cold start: new page to first getState, ${TURNS}-turn chat (from navigation start)`,
        fromNavigation.map(median),
        names,
        ms,
      ),
      ...figureRows(
        `cold start: new page to first getState, ${TURNS}-turn chat (from the page's first script)`,
        fromFirstScript.map(median),
        names,
        ms,
      ),
      ...figureRows(
        `bytes on disk after a ${TURNS}-turn chat (storage files of its own profile, browser closed)`,
        onDisk,
        names,
        kib,
      ),
      ...figureRows(`bytes after a ${TURNS}-turn chat (storage.estimate in its own profile)`, estimated, names, kib),
      ...figureRows(
        `bytes on disk after a ${LONG_TURNS}-turn chat (as above, the same profiles grown)`,
        grown,
        names.filter((_, i) => GROWN.includes(SAVERS[i])),
        kib,
      ),
    ];
  } finally {
    for (const dir of [...profiles, empty]) rmSync(dir, { recursive: true, force: true });
  }
}
