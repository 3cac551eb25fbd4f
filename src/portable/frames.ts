/**
 * Reading a file's header and records, and binding records to their place
 * (format version 2).
 *
 * A version 1 file's records are plain serializer bytes: its CRC-32 catches
 * accidents, not an attacker, who can reorder, drop or splice records and
 * fix the checksum. Version 2 is written when the serializer binds values to
 * rows (an `EncryptedSerializer`; `IndexedDBSaver.exportThread` of an
 * encrypted saver uses its own by default): every `B` and `C` record is
 * sealed with `dumpsTypedForRow` under {@link frameRef}, which names the
 * thread, a random export id, the serializer type, the header's counts, the
 * record's position and its kind. So a record moved, dropped (the counts are
 * bound, and checked against what the file holds), or taken from another
 * export does not open, and no header field that steers the import can
 * change unnoticed.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { isRowBound, type RowRef } from "../serde/protocol.js";
import {
  THREAD_EXPORT_FORMAT,
  THREAD_EXPORT_VERSION,
  type ThreadExportCounts,
  type ThreadExportHeader,
  parseJson,
} from "./format.js";
import { ThreadFileError } from "./errors.js";
import { errorMessage } from "../core/guards.js";
import { DecryptionError } from "../core/errors.js";
import type { TypedBytes } from "../rows/shapes.js";

/** The format version of files whose records are bound to their place. */
export const BOUND_EXPORT_VERSION = 2;

/** One frame's place in the file. */
export interface FrameRef {
  kind: number;
  /** Offset of the kind byte. */
  start: number;
  payload: Uint8Array;
  /** Position among the frames (the header is 0), as bound in version 2. */
  index?: number;
}

/** What a version 2 record is bound to: its file, its position and its kind. */
export function frameRef(header: ThreadExportHeader, index: number, kind: number): RowRef {
  const { checkpoints, blobs, writes } = header.counts;
  return [
    "lgthread.frame",
    header.threadId,
    header.exportId ?? "",
    header.serde,
    checkpoints,
    blobs,
    writes,
    index,
    kind,
  ];
}

/** True when records exported with `serde` are bound to their place (version 2). */
export function bindsFrames(serde: SerializerProtocol): boolean {
  return isRowBound(serde);
}

/** Encodes one record of a version 2 file (`serde` binds rows) or a version 1 file. */
export function encodeFrame(
  serde: SerializerProtocol,
  header: ThreadExportHeader,
  index: number,
  kind: number,
  record: unknown,
): Promise<TypedBytes> {
  return header.version >= BOUND_EXPORT_VERSION && isRowBound(serde)
    ? serde.dumpsTypedForRow(record, frameRef(header, index, kind))
    : serde.dumpsTyped(record);
}

/** Decodes one record with the file's serializer type (and, in version 2, its place). */
export async function decodeRecord(
  serde: SerializerProtocol,
  header: ThreadExportHeader,
  ref: FrameRef,
): Promise<unknown> {
  const bound = header.version >= BOUND_EXPORT_VERSION;
  if (bound && !isRowBound(serde)) {
    throw new ThreadFileError(
      `This langgraph-thread file is encrypted ("${header.serde}", format version ${header.version}): import it with the EncryptedSerializer (passphrase or key) of the saver that exported it as \`serde\`.`,
    );
  }
  try {
    return bound && isRowBound(serde)
      ? await serde.loadsTypedForRow(header.serde, ref.payload, frameRef(header, ref.index ?? -1, ref.kind))
      : await serde.loadsTyped(header.serde, ref.payload);
  } catch (error) {
    if (error instanceof DecryptionError) {
      throw new DecryptionError(
        `Record ${ref.index ?? "?"} of the langgraph-thread file of thread "${header.threadId}" (offset ${ref.start}) does not decrypt in its place: wrong key, or the file was altered (a record moved, dropped, changed or taken from another export). Nothing was imported.`,
        { cause: error },
      );
    }
    const reason = errorMessage(error);
    throw new ThreadFileError(
      `A record of the langgraph-thread file (offset ${ref.start}) cannot be decoded as "${header.serde}": ${reason}` +
        (header.serde === "msgpack"
          ? " (if the state holds app classes, pass a MsgpackSerializer listing them as serde)."
          : "."),
      { cause: error },
    );
  }
}

/** Parses and checks the header frame; `refuseJson` rejects files of `"json"` records. */
export function parseHeader(payload: Uint8Array, refuseJson = false): ThreadExportHeader {
  const header = parseJson(payload, "header") as Partial<ThreadExportHeader> | null;
  if (typeof header !== "object" || header === null)
    throw new ThreadFileError("The langgraph-thread header is not an object.");
  if (header.format !== THREAD_EXPORT_FORMAT) {
    throw new ThreadFileError(
      `This file is in format ${JSON.stringify(header.format)}, not ${JSON.stringify(THREAD_EXPORT_FORMAT)}: it cannot be imported as a thread.`,
    );
  }
  const { version } = header;
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1) {
    throw new ThreadFileError(`The langgraph-thread header has an invalid version ${JSON.stringify(version)}.`);
  }
  if (version > THREAD_EXPORT_VERSION) {
    throw new ThreadFileError(
      `This langgraph-thread file is format version ${version}, written by a newer ${String(header.generator ?? "library")}; this version reads up to ${THREAD_EXPORT_VERSION}. Update langgraph-checkpoint-indexeddb to import it.`,
    );
  }
  const counts = header.counts as Partial<ThreadExportCounts> | undefined;
  const countOk = (n: unknown) => typeof n === "number" && Number.isInteger(n) && n >= 0;
  if (
    typeof header.threadId !== "string" ||
    header.threadId === "" ||
    typeof header.serde !== "string" ||
    typeof counts !== "object" ||
    counts === null ||
    !countOk(counts.checkpoints) ||
    !countOk(counts.blobs) ||
    !countOk(counts.writes) ||
    (version >= BOUND_EXPORT_VERSION && (typeof header.exportId !== "string" || header.exportId === ""))
  ) {
    throw new ThreadFileError("The langgraph-thread header lacks its thread id, serializer, counts or export id.");
  }
  if (refuseJson && header.serde.split("+")[0] === "json") {
    throw new ThreadFileError(
      `This langgraph-thread file holds "${header.serde}" records, and the import was told to refuse JSON records (\`refuseJson\`). Nothing was imported.`,
    );
  }
  return header as ThreadExportHeader;
}
