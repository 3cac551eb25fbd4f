// Node has no IndexedDB: give every Node test the in-memory fake as globals
// (indexedDB, IDBKeyRange, ...), the way a page sees the real one.
import "fake-indexeddb/auto";
