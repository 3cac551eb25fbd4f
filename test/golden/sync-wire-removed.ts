/**
 * The bodies whose MessagePack bytes `sync-wire-removed.json` freezes: the
 * `removed` list of a push, the removal count of its answer, and a pulled
 * removal (`kind: "removed"`). A server and a client of protocol version 1
 * exchange these bytes forever, whichever side is older.
 */
import { SYNC_PROTOCOL_VERSION, type PullResponse, type PushRequest, type PushResponse } from "../../src/sync/protocol.js";

const removedOne = { thread_id: "thread-1", checkpoint_ns: "", checkpoint_id: "1f0b0000-0000-6000-8000-000000000002" };
const removedTwo = {
  thread_id: "thread-1",
  checkpoint_ns: "tools:7d3c",
  checkpoint_id: "1f0b0000-0000-6000-8000-000000000003",
};

/** Each frozen body by name (the JSON file's keys). */
export const WIRE_REMOVED_BODIES: {
  push: PushRequest;
  pushResponse: PushResponse;
  pull: PullResponse;
} = {
  push: {
    v: SYNC_PROTOCOL_VERSION,
    device: "device-a",
    checkpoints: [],
    deletes: [],
    removed: [removedOne, removedTwo],
  },
  pushResponse: { v: SYNC_PROTOCOL_VERSION, changed: 0, dropped: 0, seq: 12, removed: 2 },
  pull: {
    v: SYNC_PROTOCOL_VERSION,
    changes: [
      { kind: "removed", seq: 11, removed: removedOne },
      { kind: "removed", seq: 12, removed: removedTwo },
    ],
    cursor: 12,
    more: false,
  },
};
