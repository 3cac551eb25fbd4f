/**
 * The context of every live saver, by saver: how code that imports this
 * module (replication, in saver/raw-access.ts) reaches a saver's internals
 * without a public method for it. Kept apart from raw-access.ts so a saver
 * that is never synced loads only this map.
 */
import type { SaverContext } from "./context.js";

/** Contexts by saver; a saver that is garbage-collected drops out. */
const contexts = new WeakMap<object, SaverContext>();

/** Records `ctx` as the context of `saver` (its constructor calls this). @internal */
export function registerContext(saver: object, ctx: SaverContext): void {
  contexts.set(saver, ctx);
}

/** The context of `saver`, or undefined when it is not an `IndexedDBSaver` (of this copy of the package). @internal */
export function contextOf(saver: unknown): SaverContext | undefined {
  return typeof saver === "object" && saver !== null ? contexts.get(saver) : undefined;
}
