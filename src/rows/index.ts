/**
 * rows/: the row format that the browser saver (saver/), the sync server
 * (sync-server/) and thread export (portable/) share, as pure code that opens
 * no database: the row shapes and the saver's own rows among them
 * (shapes.ts), value encoding and decoding bound to a row (codec.ts), id
 * checks (ids.ts), channel versions (versions.ts) and a `put`'s input made
 * ready to store (put-input.ts). It imports only core/ and serde/. A frozen
 * format: what these modules write is on users' disks and servers.
 */
export * from "./shapes.js";
export * from "./codec.js";
export * from "./ids.js";
export * from "./versions.js";
export * from "./put-input.js";
