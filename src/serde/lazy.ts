/**
 * The loader of the failures chunk (failures.ts), shared by the serializer
 * (msgpack/index.ts), the key record's binding (protocol.ts) and the saver
 * (saver/context.ts): one `import()` site, whose promise is kept, instead of
 * one per module (each site an app bundler wraps in its preload call).
 */
import { loadOnce } from "../core/tasks.js";

/** The rare failures' messages, loaded by the first failure that needs one and kept. @internal */
export const failuresModule = loadOnce(() => import("./failures.js"));
