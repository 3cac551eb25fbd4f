/** The Chromium launch settings for TypeScript importers; defined in chromium.mjs. */
export { chromiumArgs, chromiumPath, fullChromiumPath } from "./chromium.mjs";
