/**
 * `langgraph-checkpoint-indexeddb/serde`: for writing a serializer of your
 * own, or a tool that reads stored bytes. The serializers themselves
 * (`MsgpackSerializer`, `EncryptedSerializer`) come from the root entry.
 *
 * - The protocol between a storage class and its serializer: row binding
 *   (`RowBoundSerializer`, `RowRef`), per-database key records
 *   (`DatabaseKeyedSerializer`, `KeyRecord`, `DatabaseBinding`) and key
 *   changes (`RewrappableSerializer`, `RekeyableSerializer`, ...). Any plain
 *   `SerializerProtocol` works without them.
 * - The encrypted format: `inspectEnvelope` reads an encrypted value's header
 *   (format version, key id, inner type), and the key record's shape
 *   (`AesGcmKeyRecord`). The bytes are specified in docs/encryption.md.
 *
 * @module
 */
export type {
  RowRef,
  RowBoundSerializer,
  DatabaseKeyedSerializer,
  DatabaseBinding,
  KeyRecord,
} from "./serde/protocol.js";
export type {
  KeyRecordAccess,
  RewrappableSerializer,
  RekeyableSerializer,
  DataKeyRotation,
  StoredValue,
  ValueRewriter,
} from "./serde/rekey.js";
export {
  inspectEnvelope,
  AES_GCM_SUFFIX,
  type EnvelopeInfo,
  type AesGcmKeyRecord,
  type WrappedDataKey,
} from "./serde/encrypted/index.js";
