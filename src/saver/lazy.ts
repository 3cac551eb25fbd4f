/**
 * The loader of the maintenance chunk (maintenance.ts), shared by the saver
 * (index.ts) and `list()` across threads or namespaces (list.ts): one
 * `import()` site, whose promise is kept for every later call (an app
 * bundler's `import()` checks its preloads at each call).
 */
import { loadOnce } from "../core/tasks.js";

/** The maintenance chunk, loaded by the first call that needs it and kept. @internal */
export const maintenance = loadOnce(() => import("./maintenance.js"));
