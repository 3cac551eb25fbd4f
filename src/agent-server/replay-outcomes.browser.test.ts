/**
 * A finished run replayed in Chromium (the browser's IndexedDB, WebCrypto
 * and BroadcastChannel; the cases of replay-outcomes.node.test.ts, from one
 * list in test/support/agent-server/replay.ts): a failed run whose error
 * event `rekey` sealed away, or whose events `keepRunEvents` pruned, replays
 * as failed (`RunFailedError`), not cut short; an answered one as
 * finished; a tab whose key another changed answers a replay 409
 * `KeyChangedError` at once, and still answers `runs.get`; a server opened
 * with a key that never opened its database answers 409 `DecryptionError`.
 */
import { replayOutcomeTests } from "../../test/support/agent-server/replay.js";

replayOutcomeTests();
