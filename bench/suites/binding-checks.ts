/**
 * What the authenticated structural checks of an encrypted saver (issue 11,
 * item 2: src/saver/verify.ts) cost on getTuple, list and the delta walk.
 * The checks cannot be switched off at runtime, so each row measures the
 * operation as shipped and the checks alone on the same rows, sealed by the
 * same kind of data key. getTuple and list: the operation beside itself
 * minus its (synchronous) checks. The delta walk runs its checks (one
 * decryption per ancestor) while the writes decode, so its row puts the
 * checks alone beside the whole walk.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { EncryptedSerializer, IndexedDBSaver } from "../../src/index.js";
import { decodeCheckpoint, decodeMetadata, encode, rowRef } from "../../src/saver/rows.js";
import type { CheckpointRow } from "../../src/saver/schema.js";
import { verifyCheckpointFields, verifyParentLinks } from "../../src/saver/verify.js";
import { deleteDatabase, ms, msPerCall, row, type BenchRow } from "../harness.js";

const SUITE = "encryption";
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

/** getTuple, list and the delta walk on an encrypted saver, each beside itself minus the checks. */
export async function bindingCheckRows(): Promise<BenchRow[]> {
  const name = `bench-binding-${Date.now()}`;
  const serde = await EncryptedSerializer.fromRawKey(crypto.getRandomValues(new Uint8Array(32)));
  const saver = new IndexedDBSaver({ dbName: name, serde });
  let config: RunnableConfig = { configurable: { thread_id: THREAD, checkpoint_ns: "" } };
  for (let step = 1; step <= DEPTH; step++) {
    const checkpoint = turn(idOf(step), step);
    const newVersions = step === 1 ? checkpoint.channel_versions : { notes: checkpoint.channel_versions.notes };
    config = await saver.put(config, checkpoint, metadataOf(step), newVersions);
    await saver.putWrites(config, [["messages", { role: "user", content: "x".repeat(400) }]], `task-${step}`);
  }
  const latest = { configurable: { thread_id: THREAD, checkpoint_ns: "" } };
  const getTime = await msPerCall(() => saver.getTuple(latest));
  const listTime = await msPerCall(
    async () => {
      for await (const tuple of saver.list(latest)) void tuple;
    },
    { perRound: 5, rounds: 5, warmup: 2 },
  );
  const walkTime = await msPerCall(() => saver.getDeltaChannelHistory({ config: latest, channels: ["messages"] }), {
    perRound: 10,
    rounds: 5,
    warmup: 3,
  });
  await saver.close();
  await deleteDatabase(name);

  // The checks alone, on rows sealed the same way.
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
  const linkChecks = await msPerCall(() => verifyParentLinks(sealing!, rows), { perRound: 10, rounds: 5, warmup: 3 });

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
    // The walk runs its link checks while the writes decode, so "minus checks" would be a guess:
    // this row puts the checks alone beside the whole walk (goal: a tenth of it).
    row(
      SUITE,
      `delta walk, ${DEPTH} ancestors, encrypted: link checks alone vs whole walk`,
      linkChecks,
      walkTime,
      "whole walk",
      ms,
      { max: 0.1 },
    ),
  ];
}
