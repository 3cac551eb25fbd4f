/**
 * The saver's maintenance, loaded as one chunk by the first call of any of
 * them: what an app runs now and then (deleting, copying, pruning threads,
 * deleting runs, changing or rotating the key), never on a graph's path,
 * `listThreads`, whose summaries (threads.ts) copy, prune and deleteForRuns
 * rewrite, a `list()` across threads or namespaces (index-pages.ts),
 * which a graph run never makes, and the writes that meet a deleted thread
 * or a key changed meanwhile (late-put.ts). One chunk rather than one per file: each chunk
 * costs a request and its own gzip overhead, and a module both loaded with
 * `import()` and imported by another lazy chunk (threads.ts was) makes
 * Rolldown split what it shares with the saver (idb) into a chunk of its
 * own, loaded up front as one more file (docs/benchmarks.md, "Bundle").
 */
export { deleteThread, clearTombstone } from "./delete-thread.js";
export { markReplaced } from "./replace-marks.js";
export { copyThread } from "./copy.js";
export { prune } from "./prune.js";
export { deleteForRuns } from "./runs.js";
export { changeKey, rekey } from "./rekey.js";
export { listThreads } from "./threads.js";
export { taskPathReader } from "./task-paths.js";
export { indexPages } from "./index-pages.js";
export { putWritesCarefully, recordLatePut } from "./late-put.js";
