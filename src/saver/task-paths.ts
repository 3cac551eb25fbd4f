/**
 * The task path of each pending write, for `exportThread`: the file keeps it
 * (an ancillary `p` frame, docs/export-format.md), since LangGraph orders a
 * checkpoint's writes by `(task_path, task_id, idx)` when it replays a delta
 * channel, and a resumed run adds writes with real paths beside the imported
 * ones. `getTuple`'s pending writes carry no path; the export module reads no
 * rows, so the saver hands it this reader.
 */
import type { SaverContext } from "./context.js";
import { prefixBounds } from "./keys.js";
import { sortWrites } from "../rows/codec.js";

/** Each pending write of one checkpoint as `[taskId, channel, taskPath]`, in `getTuple`'s order. */
export function taskPathReader(ctx: SaverContext, threadId: string) {
  return async (ns: string, checkpointId: string): Promise<[string, string, string][]> => {
    const rows = await ctx.db.read(
      ["writes"],
      (tx) => {
        const bounds = prefixBounds(threadId, ns, checkpointId);
        return tx.objectStore("writes").getAll(ctx.db.ranges.bound(bounds.lower, bounds.upper));
      },
      "read task paths",
    );
    return sortWrites(rows).map((write) => [write.task_id, write.channel, write.task_path ?? ""]);
  };
}
