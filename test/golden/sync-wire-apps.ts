/**
 * The bodies whose MessagePack bytes `sync-wire-apps.json` freezes: `GET
 * /v1/hello` answered by a server that predates apps (no `app`), and by
 * one that scopes replication per app, for the app holding the user's own
 * space (`unscoped: true`) and for an app with a space of its own. A server
 * and a client of protocol version 1 exchange these bytes forever,
 * whichever side is older.
 */
import { SYNC_PROTOCOL_VERSION, type HelloResponse } from "../../src/sync/protocol.js";

const record = new Uint8Array([0x81, 0xa1, 0x76, 0x01]);

/** Each frozen body by name (the JSON file's keys). */
export const WIRE_APPS_BODIES: { helloBefore: HelloResponse; helloUnscoped: HelloResponse; helloOwn: HelloResponse } = {
  helloBefore: { v: SYNC_PROTOCOL_VERSION, user: "ada", keyRecord: null, hasData: true, seq: 41 },
  helloUnscoped: {
    v: SYNC_PROTOCOL_VERSION,
    user: "ada",
    keyRecord: record,
    hasData: true,
    seq: 41,
    app: "chat",
    unscoped: true,
  },
  helloOwn: { v: SYNC_PROTOCOL_VERSION, user: "ada", keyRecord: null, hasData: false, seq: 0, app: "notes", unscoped: false },
};
