/**
 * A finished run replayed in Chromium (the browser's IndexedDB, WebCrypto
 * and BroadcastChannel; the cases of replay-outcomes.node.test.ts): a failed
 * run whose error event `rekey` sealed away, or whose events `keepRunEvents`
 * pruned, replays as failed (`RunFailedError`), not cut short; an answered
 * one as finished; a tab whose key another changed answers a replay 409
 * `KeyChangedError` at once, and still answers `runs.get`; a server opened
 * with a key that never opened its database answers 409 `DecryptionError`.
 */
import { afterEach, it } from "vitest";
import { closeServers } from "../../test/support/agent-server/server.js";
import {
  failedRunAfterRekey,
  failedRunPruned,
  keyChangedElsewhere,
  wrongKeyFromTheStart,
} from "../../test/support/agent-server/replay.js";

afterEach(closeServers);

it(
  "a failed run whose error event rekey sealed away replays as failed; an answered one as finished",
  failedRunAfterRekey,
);
it("a failed run whose events keepRunEvents pruned replays as failed; an answered one as finished", failedRunPruned);
it("another tab changed the key: a replay answers 409 KeyChangedError at once; runs.get answers", keyChangedElsewhere);
it("a key that never opened the database: a read answers 409 DecryptionError at once", wrongKeyFromTheStart);
