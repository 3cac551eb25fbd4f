/**
 * The page that `firstUseInFreshFrame` (msgpack-first-use.ts) loads into a
 * fresh frame: it imports the serializer and msgpackr anew, in a realm of
 * its own, and publishes the check.
 */
import { firstUse } from "./msgpack-first-use.js";

(window as unknown as { msgpackFirstUse: { firstUse: typeof firstUse } }).msgpackFirstUse = { firstUse };
