/**
 * The arguments of a `put`, checked and copied before anything is awaited:
 * the ids, the checkpoint without its channel values, the values, and the
 * metadata with the run id LangGraph leaves in `config.metadata`. Shared by
 * the saver and the sync server's saver, which must store the same thing.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  copyCheckpoint,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { assertStorableId, configIds, idDefect } from "./ids.js";
import { encode, rowRef } from "./codec.js";
import type { BlobRow } from "./shapes.js";

/** A put's input, ready to serialize. */
export interface PutInput {
  threadId: string;
  checkpointNs: string;
  checkpointId: string;
  /** The checkpoint it follows, from `config.configurable.checkpoint_id`. */
  parentId: string | undefined;
  /** The checkpoint without `channel_values` (they are stored per version). */
  withoutValues: Omit<Checkpoint, "channel_values">;
  values: Checkpoint["channel_values"];
  /** The metadata, with `config.metadata.run_id` copied in when it has none (for `deleteForRuns`). */
  metadata: Record<string, unknown>;
}

/** Checks and copies a put's arguments synchronously: the caller may reuse these objects once we await. */
export function putInput(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): PutInput {
  if (config.configurable === undefined) {
    throw new Error(
      `Failed to put checkpoint. The passed RunnableConfig is missing a required "configurable" property.`,
    );
  }
  const { threadId, checkpointNs, checkpointId: parentId } = configIds(config, "put checkpoint");
  // The first place an id enters: refuse those that would not round-trip (reads still accept them).
  assertStorableId("thread_id", threadId);
  assertStorableId("checkpoint_ns", checkpointNs, { allowEmpty: true });
  if (parentId !== undefined) assertStorableId("checkpoint_id", parentId);
  assertStorableId("checkpoint.id", checkpoint.id);
  checkVersions("checkpoint.channel_versions", checkpoint.channel_versions ?? {});
  const { channel_values: values, ...withoutValues } = { ...checkpoint, ...copyCheckpoint(checkpoint) };
  const stored: Record<string, unknown> = { ...metadata };
  const runId: unknown = config.metadata?.run_id;
  if (stored.run_id === undefined && runId !== undefined) stored.run_id = runId;
  if (typeof stored.run_id === "string") assertStorableId("metadata.run_id", stored.run_id);
  return { threadId, checkpointNs, checkpointId: checkpoint.id, parentId, withoutValues, values, metadata: stored };
}

/**
 * Throws unless every version is a string or a number (not NaN), as
 * LangGraph's are: IndexedDB keys values by them (a key it refuses would
 * abort the put's transaction mid-way), and a reader takes a stored row with
 * any other version for one altered outside the saver (saver/reads.ts
 * `assertRowFields`).
 */
export function checkVersions(field: string, versions: object): void {
  for (const [channel, version] of Object.entries(versions)) {
    // Channel names and versions are key parts of blob rows, which the journal, the sync server and exports
    // carry as UTF-8 text: a lone surrogate became U+FFFD there (a restored row then failed its checks).
    const defect = idDefect(`${channel}.${String(version)}`);
    if ((typeof version !== "string" && !(typeof version === "number" && !Number.isNaN(version))) || defect) {
      throw new Error(
        `Invalid "${field}": channel "${channel}" has version ${String(version)}${defect ? ` (names and versions ${defect})` : ""}.`,
      );
    }
  }
}

/** Serializes the values of `input` whose channels `versions` names, as blob rows at those versions. */
export function serializeValues(
  serde: SerializerProtocol,
  input: PutInput,
  versions: ChannelVersions,
): Promise<BlobRow[]> {
  const { threadId, checkpointNs, values } = input;
  return Promise.all(
    Object.entries(versions)
      .filter(([channel]) => Object.hasOwn(values, channel))
      .map(async ([channel, version]): Promise<BlobRow> => {
        assertStorableId("channel", channel);
        return {
          thread_id: threadId,
          checkpoint_ns: checkpointNs,
          channel,
          version,
          value: await encode(
            serde,
            `serialize channel "${channel}"`,
            values[channel],
            rowRef.blob(threadId, checkpointNs, channel, version),
          ),
        };
      }),
  );
}
