/** Files the setup project writes and the tests read. */
import { fileURLToPath } from "node:url";

const out = (name: string) =>
  fileURLToPath(new URL(`../../../test-results/example-playwright-state/${name}`, import.meta.url));

/** The conversation the setup recorded through the app. */
export const RECORDED_THREAD = out("recorded.lgthread");
/** The storage state with that conversation seeded as thread "seeded". */
export const SEEDED_STATE = out("seeded.json");
/** A storage state built from the recorded file by toStorageState, with no browser, as thread "from-file". */
export const FILE_STATE = out("from-file.json");
