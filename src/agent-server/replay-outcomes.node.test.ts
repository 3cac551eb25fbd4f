/**
 * A finished run replayed (`runs.joinStream`, `runs.join`) tells how it
 * ended as its record says, when its stored events no longer tell it: a
 * failed run whose error event is sealed under a data key `rekey` retired,
 * or whose events `keepRunEvents` pruned, replays as failed
 * (`RunFailedError`, saying why its error's details are not shown), never
 * as cut short (`RunLostError`, kept for a run whose tab closed mid-run:
 * join.node.test.ts); a successful one as finished. A tab whose key another
 * tab changed answers a replay 409 `KeyChangedError` at once (a 500 was
 * asked again by the SDK for 20 s), and still answers `runs.get`. A server
 * opened with a key that never opened its database answers a read 409
 * `DecryptionError` as well.
 */
import { replayOutcomeTests } from "../../test/support/agent-server/replay.js";

replayOutcomeTests();
