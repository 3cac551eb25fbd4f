/**
 * The PGlite peer: `@steerprotocol/langgraph-checkpoint-pglite` 0.0.6, the
 * only other browser LangGraph saver, written for LangGraph 0.x.
 *
 * It calls `serde.dumpsTyped` without awaiting it (0.x serializers returned
 * the tuple; LangGraph 1.x's JsonPlusSerializer returns a promise), so on
 * 1.x its first `put` throws. `syncDumpsSerde` is the thin adapter the bench
 * gives it: LangGraph 1.x's own JSON serializer with `dumpsTyped` answering
 * synchronously, the bytes unchanged. Nothing else of the saver is altered.
 */
import { PGlite } from "@electric-sql/pglite";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { PgLiteSaver } from "@steerprotocol/langgraph-checkpoint-pglite";

/** JsonPlusSerializer with `dumpsTyped` synchronous, as the 0.x serializers were. */
class SyncDumpsSerializer extends JsonPlusSerializer {
  // The saver destructures the result at once; callers that await a tuple get it unchanged.
  override dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    const tuple: [string, Uint8Array] = value instanceof Uint8Array ? ["bytes", value] : ["json", this._dumps(value)];
    return tuple as unknown as Promise<[string, Uint8Array]>;
  }
}

/**
 * A PGlite saver on `dataDir` (`idb://name` in a page, `memory://` in Node),
 * set up; `adapted` gives it the synchronous-dumps serializer.
 */
export async function pgliteSaver(dataDir: string, adapted = true): Promise<PgLiteSaver> {
  const db = new PGlite(dataDir);
  const saver = adapted ? PgLiteSaver.fromInstance(db, new SyncDumpsSerializer()) : PgLiteSaver.fromInstance(db);
  await saver.setup();
  return saver;
}
