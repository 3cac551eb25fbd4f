/**
 * The task path of each pending write, for `exportThread`: the file keeps it
 * (an ancillary `p` frame, docs/export-format.md), since LangGraph orders a
 * checkpoint's writes by `(task_path, task_id, idx)` when it replays a delta
 * channel, and a resumed run adds writes with real paths beside the imported
 * ones. `getTuple`'s pending writes carry no path; the export module reads no
 * rows, so the saver hands it this reader, which gives the checkpoint's tuple
 * with them: one read of its rows, where a `getTuple` and a read of the write
 * rows for their paths read (and copied out of IndexedDB) every write twice.
 */
import type { SaverContext } from "./context.js";
import { getTuple } from "./get.js";
import { sortWrites } from "../rows/codec.js";
import type { TaskPathSource } from "../core/task-paths.js";

/** One checkpoint of `threadId` as `getTuple` gives it, with its writes' task paths in the tuple's order. */
export function taskPathReader(ctx: SaverContext, threadId: string): TaskPathSource {
  return async (ns, checkpointId) => {
    let writes: [string, string, string][] = [];
    const tuple = await getTuple(
      ctx,
      { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } },
      (raw) => {
        // In the order the tuple's writes are decoded in (getTuple sorts them the same way).
        writes = sortWrites([...raw.writes]).map((write) => [write.task_id, write.channel, write.task_path ?? ""]);
      },
    );
    return tuple && { tuple, writes };
  };
}
