/**
 * What some e2e tests import in the page, beside the app: built with the demo
 * (e2e/global-setup.ts) as `/e2e/internals.js`, sharing the app's chunks.
 * - history.e2e.test.ts writes long threads through the app's own Session;
 * - vault.e2e.test.ts rewrites a vault as an older format wrote it;
 * - csp.e2e.test.ts turns on the package's OPFS journal as an app would;
 * - support.ts's seedTurns writes a test's set-up turns through the Session;
 * - chat.e2e.test.ts touches a thread as another tab's write would, mid-click.
 */
export { Session } from "../demo/src/session.js";
export { DemoDB } from "../demo/src/threads-db.js";
export { plainVault } from "../demo/src/settings.js";
export { EncryptedSerializer, IndexedDBSaver } from "../src/index.js";
