/**
 * The demo's entry: boots the vault (boot.ts: the lock screen when the app
 * is locked), then starts the App (app.ts) on its session; a failure to
 * start is said on the page.
 */
import { App } from "./app.js";
import { boot } from "./boot.js";
import { messageOf } from "./errors.js";
import type { Session } from "./session.js";
import { DemoDB } from "./threads-db.js";
import { h } from "./ui/dom.js";
import { vaultNotice } from "./ui/lock.js";

const db = new DemoDB();
const root = document.getElementById("app")!;

/** Opens the app on `session`, at the thread updated last. */
async function start(session: Session): Promise<void> {
  const last = await db.threads.orderBy("updatedAt").last();
  new App(db, root, session, last?.id);
  // Settings a locked vault refused (planted rows): said, not silently replaced.
  if (session.problems.length > 0) root.querySelector(".app")?.prepend(vaultNotice(session.problems));
}

boot(db, root, start).catch((error: unknown) => {
  root.replaceChildren(
    h("div", { class: "fatal", role: "alert" }, h("h1", {}, "The app could not start"), h("p", {}, messageOf(error))),
  );
});
