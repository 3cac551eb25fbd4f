/**
 * `langgraph-checkpoint-indexeddb/journal`: crash-journal backends of your
 * own (`journal: backend` in `IndexedDBSaver`'s options, see docs/journal.md).
 * `JournalBackend` is the file a journal lives in; `MemoryJournalBackend`
 * keeps it in this process's memory, for an app's tests (`journal: "memory"`
 * picks it by name).
 *
 * @module
 */
export { MemoryJournalBackend, type JournalBackend } from "./journal/index.js";
