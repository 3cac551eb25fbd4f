/**
 * The saver's maintenance, loaded as one chunk by the first call of any of
 * them: what an app runs now and then (deleting, copying, pruning threads,
 * deleting runs, changing or rotating the key), never on a graph's path.
 * One chunk rather than one per file: an app that calls one of these tends
 * to call the others, and each chunk costs a request and its own gzip
 * overhead (docs/benchmarks.md, "Bundle").
 */
export { deleteThread, clearTombstone } from "./delete-thread.js";
export { copyThread } from "./copy.js";
export { prune } from "./prune.js";
export { deleteForRuns } from "./runs.js";
export { changeKey, rekey } from "./rekey.js";
