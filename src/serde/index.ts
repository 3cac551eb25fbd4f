/**
 * serde/: serializers. `MsgpackSerializer` (msgpack/), `EncryptedSerializer`
 * (encrypted/), and the protocol between a storage class and its serializer
 * (protocol.ts: row binding, per-database key records, key changes). It
 * imports only core/; storage classes import it, never the reverse.
 */
export * from "./protocol.js";
export { MsgpackSerializer } from "./msgpack/index.js";
export { EncryptedSerializer } from "./encrypted/index.js";
