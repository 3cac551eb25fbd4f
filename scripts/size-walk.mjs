// A graph on a delta channel, without encryption, for the bundle-size check
// (size-limits.json): it writes a turn and walks the channel's history
// (getDeltaChannelHistory), as LangGraph does at each step of such a graph. What
// only encrypted rows need (saver/sealed.ts: the hash chain and SHA-256) must not
// load. Run by scripts/app-bundle.mjs's runApp on the built app.
import { writeTurn } from "./size-chat.mjs";

/** @param {{ IndexedDBSaver: typeof import("../src/index.ts").IndexedDBSaver }} app */
export default async function walk({ IndexedDBSaver }) {
  const saver = new IndexedDBSaver({ dbName: "size-walk" });
  const config = await writeTurn(saver);
  const history = await saver.getDeltaChannelHistory({ config, channels: ["messages"] });
  if (!history.messages) throw new Error("size-walk: the walk returned no history of the channel");
  await saver.close();
}
