/**
 * What a test page loaded into an iframe tab (iframe-tab.ts) needs: the
 * saver's on-demand modules able to load, and one saver per database.
 */
import { IndexedDBSaver } from "../../src/saver/index.js";

// Vitest's browser mode rewrites import() into __vitest_browser_runner__.wrapDynamicImport(...)
// in the modules it serves. This frame is a page of our own with no runner in it; give it the
// same pass-through that Vitest gives workers, or the saver's on-demand modules cannot load.
(globalThis as { __vitest_browser_runner__?: unknown }).__vitest_browser_runner__ ??= {
  wrapDynamicImport: (load: () => unknown) => load(),
};

/** The savers this page made, by database name. */
export const pageSavers = new Map<string, IndexedDBSaver>();

/** This page's saver on `dbName`, made on first use. */
export function saverFor(dbName: string): IndexedDBSaver {
  let saver = pageSavers.get(dbName);
  if (!saver) pageSavers.set(dbName, (saver = new IndexedDBSaver({ dbName })));
  return saver;
}
