/**
 * What the authenticated structural checks of an encrypted saver (issue 11,
 * item 2: src/saver/verify.ts) cost on getTuple, list and the delta walk.
 * The checks cannot be switched off at runtime. getTuple and list: the
 * operation beside itself minus its (synchronous) checks, measured alone on
 * the same rows. The delta walk: the shipped saver beside the same walk on a
 * saver whose EncryptedSerializer does not bind rows (same cipher, same data
 * key kind, same number and size of decryptions; nothing for the walk to
 * check, so it checks nothing), on the same thread. Twice: walks repeated on
 * one saver (every step of a graph and every snapshot of its history walks
 * the chain again), and the first walk of a freshly opened saver (nothing
 * proven yet: one checkpoint decryption per ancestor).
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import type { DatabaseKeyedSerializer } from "../../src/serde/protocol.js";
import { decodeCheckpoint, decodeMetadata, encode, rowRef } from "../../src/rows/codec.js";
import type { CheckpointRow } from "../../src/rows/shapes.js";
import { verifyCheckpointFields } from "../../src/saver/verify.js";
import { alternately, deleteDatabase, median, ms, msPerCall, row, type BenchRow, type Suite } from "../harness.js";

const SUITE = "binding-checks";
const DEPTH = 64;
const THREAD = "walk";

/** A turn's checkpoint as LangGraph writes it: a delta channel bumped, a little state. */
function turn(id: string, step: number) {
  return {
    ...emptyCheckpoint(),
    id,
    channel_values: step === 1 ? { messages: ["seed"], notes: "n" } : { notes: `n${step}` },
    channel_versions: { messages: `${step}.m`, notes: `${step}.n`, __start__: `${step}.s` },
    versions_seen: { agent: { messages: `${step - 1}.m` }, __input__: {} },
  };
}

const metadataOf = (step: number): CheckpointMetadata =>
  ({ source: "loop", step, parents: {}, run_id: "run-1" }) as CheckpointMetadata;

const idOf = (step: number) => `0000${step}`.slice(-5);

/** The saver's rows of the thread, sealed as the saver seals them. */
async function sealedRows(): Promise<CheckpointRow[]> {
  const { serde } = await (
    await EncryptedSerializer.fromRawKey(crypto.getRandomValues(new Uint8Array(32)))
  ).forDatabase(undefined);
  sealing = serde;
  const rows: CheckpointRow[] = [];
  for (let step = 1; step <= DEPTH; step++) {
    const { channel_values: _values, ...withoutValues } = turn(idOf(step), step);
    const parent = step === 1 ? undefined : idOf(step - 1);
    const checkpointRow: CheckpointRow = {
      thread_id: THREAD,
      checkpoint_ns: "",
      checkpoint_id: idOf(step),
      checkpoint: await encode(serde, "bench", withoutValues, rowRef.checkpoint(THREAD, "", idOf(step), parent)),
      metadata: await encode(serde, "bench", metadataOf(step), rowRef.metadata(THREAD, "", idOf(step))),
      channel_versions: { ...withoutValues.channel_versions },
      run_id: "run-1",
      created_at: 0,
    };
    if (parent !== undefined) checkpointRow.parent_checkpoint_id = parent;
    rows.push(checkpointRow);
  }
  return rows;
}
let sealing: Awaited<ReturnType<EncryptedSerializer["forDatabase"]>>["serde"] | undefined;

/**
 * The same serializer without row binding (`dumpsTypedForRow` hidden): its
 * rows are sealed and opened exactly as costly, but bound to no row, so the
 * saver has no clear field to check them against. The walk's baseline.
 */
function withoutRowBinding(serde: EncryptedSerializer): DatabaseKeyedSerializer {
  const unbound = (inner: SerializerProtocol): SerializerProtocol => ({
    dumpsTyped: (value) => inner.dumpsTyped(value),
    loadsTyped: (type, data) => inner.loadsTyped(type, data),
  });
  return {
    ...unbound(serde),
    async forDatabase(stored, database) {
      const binding = await serde.forDatabase(stored, database);
      return { ...binding, serde: unbound(binding.serde) };
    },
  };
}

/**
 * Savers on `name` with `serdes`, each holding its thread of `threads`:
 * DEPTH turns, one `messages` write each. The threads are written turn by
 * turn in lockstep, so neither thread's rows are older in the database's
 * files than the other's (with two databases, or one thread written after
 * the other, single runs differed by up to 30% in either direction; where
 * rows lie was a suspect, not a proven cause).
 */
async function threadSavers(name: string, serdes: SerializerProtocol[], threads: string[]): Promise<IndexedDBSaver[]> {
  const savers = serdes.map((serde) => new IndexedDBSaver({ dbName: name, serde }));
  const configs: RunnableConfig[] = threads.map((thread) => ({
    configurable: { thread_id: thread, checkpoint_ns: "" },
  }));
  for (let step = 1; step <= DEPTH; step++) {
    const checkpoint = turn(idOf(step), step);
    const newVersions = step === 1 ? checkpoint.channel_versions : { notes: checkpoint.channel_versions.notes };
    for (const [i, saver] of savers.entries()) {
      configs[i] = await saver.put(configs[i]!, checkpoint, metadataOf(step), newVersions);
      await saver.putWrites(configs[i]!, [["messages", { role: "user", content: "x".repeat(400) }]], `task-${step}`);
    }
  }
  return savers;
}

/** The thread the unbound saver writes, beside THREAD in the same database (so both read the same files). */
const UNBOUND_THREAD = "walk-unbound";
const latest = (thread: string) => ({ configurable: { thread_id: thread, checkpoint_ns: "" } });
const LATEST = latest(THREAD);
const walk = (saver: IndexedDBSaver, thread = THREAD) =>
  saver.getDeltaChannelHistory({ config: latest(thread), channels: ["messages"] });

/**
 * Ms of the first walk of a saver just opened on `name` (and unlocked:
 * opening and unwrapping the key are not timed), closed again after.
 */
function firstWalk(name: string, serde: SerializerProtocol, thread: string): () => Promise<number> {
  return async () => {
    const saver = new IndexedDBSaver({ dbName: name, serde });
    await saver.unlock();
    const start = performance.now();
    await walk(saver, thread);
    const time = performance.now() - start;
    await saver.close();
    return time;
  };
}

/** The median of `a`'s and of `b`'s results over `count` alternating calls (see {@link alternately}). */
async function alternateSamples(
  a: () => Promise<number>,
  b: () => Promise<number>,
  count: number,
): Promise<[number, number]> {
  const as: number[] = [];
  const bs: number[] = [];
  for (let i = 0; i < count; i++) {
    as.push(await a());
    bs.push(await b());
  }
  return [median(as), median(bs)];
}

/** getTuple, list and the delta walk on an encrypted saver, each beside itself without the checks. */
export async function bindingCheckRows(): Promise<BenchRow[]> {
  const name = `bench-binding-${Date.now()}`;
  const serde = await EncryptedSerializer.fromRawKey(crypto.getRandomValues(new Uint8Array(32)));
  const unbound = withoutRowBinding(serde);
  // Both threads in one database, each written by its saver.
  const [saver, baseline] = (await threadSavers(name, [serde, unbound], [THREAD, UNBOUND_THREAD])) as [
    IndexedDBSaver,
    IndexedDBSaver,
  ];
  const getTime = await msPerCall(() => saver.getTuple(LATEST));
  const listTime = await msPerCall(
    async () => {
      for await (const tuple of saver.list(LATEST)) void tuple;
    },
    { perRound: 5, rounds: 5, warmup: 2 },
  );
  const [walkTime, walkBase] = await alternately(
    () => walk(saver),
    () => walk(baseline, UNBOUND_THREAD),
    { perRound: 5, rounds: 40, warmup: 5 },
  );
  await saver.close();
  await baseline.close();
  const [firstTime, firstBase] = await alternateSamples(
    firstWalk(name, serde, THREAD),
    firstWalk(name, unbound, UNBOUND_THREAD),
    61,
  );
  await deleteDatabase(name);

  // getTuple's and list's checks alone, on rows sealed the same way.
  const rows = await sealedRows();
  const decoded = await Promise.all(
    rows.map(async (r) => ({
      checkpoint: await decodeCheckpoint(sealing!, r),
      metadata: await decodeMetadata(sealing!, r),
    })),
  );
  const fieldChecks = (count: number) => {
    for (let i = 0; i < count; i++)
      verifyCheckpointFields(rows[i]!, decoded[i]!.checkpoint, decoded[i]!.metadata, true);
  };
  const oneCheck = await msPerCall(() => fieldChecks(1), { perRound: 500 });
  const pageChecks = await msPerCall(() => fieldChecks(DEPTH), { perRound: 20 });

  const without = (whole: number, checks: number) => Math.max(whole - checks, Number.EPSILON);
  return [
    row(
      SUITE,
      "getTuple, encrypted: with vs without the structural checks",
      getTime,
      without(getTime, oneCheck),
      "same minus checks",
      ms,
      { max: 1.1 },
    ),
    row(
      SUITE,
      `list ${DEPTH} checkpoints, encrypted: with vs without the checks`,
      listTime,
      without(listTime, pageChecks),
      "same minus checks",
      ms,
      { max: 1.1 },
    ),
    row(
      SUITE,
      `delta walk, ${DEPTH} ancestors, encrypted, repeated: with vs without the checks`,
      walkTime,
      walkBase,
      "rows not bound",
      ms,
      { max: 1.1 },
    ),
    // The one walk per opened saver that proves every ancestor: binding
    // version 3 decrypts its target and hashes each ancestor (saver/chain.ts).
    row(
      SUITE,
      `delta walk, ${DEPTH} ancestors, encrypted, first after open: with vs without`,
      firstTime,
      firstBase,
      "rows not bound",
      ms,
      { max: 1.1 },
    ),
  ];
}

/** The structural checks suite (`npm run bench -- binding-checks`). */
export const bindingChecksSuite: Suite = { name: SUITE, run: bindingCheckRows };
