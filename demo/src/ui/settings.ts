/**
 * The settings dialog: passphrase lock, sync and About; the model section
 * is in settings-model.ts, the storage and memory sections in settings-data.ts.
 */
import { MIN_PASSPHRASE_LENGTH } from "../settings.js";
import { KeyChangeCutError } from "../session-lock.js";
import { field, h, replace, setStatus } from "./dom.js";
import { memorySection, storageSection, type SettingsContext } from "./settings-data.js";
import { modelSection, secretHint } from "./settings-model.js";
import { icon } from "./icons.js";
import { AUTO_LOCK_CHOICES, autoLockMinutes, setAutoLockMinutes } from "../auto-lock.js";

const PASSPHRASE_HINT = `At least ${MIN_PASSPHRASE_LENGTH} characters, e.g. a few unrelated words.`;

/** A passphrase field's input; `id` is also its test id. */
function secretInput(id: string, autocomplete: "current-password" | "new-password"): HTMLInputElement {
  return h("input", { type: "password", id, testid: id, autocomplete, required: true });
}

/**
 * True when `again` repeats `first`; otherwise says so in `status` and puts
 * the focus on `again`. There is no recovery from a mistyped passphrase.
 */
function typedTwice(first: HTMLInputElement, again: HTMLInputElement, status: HTMLElement): boolean {
  if (first.value === again.value) return true;
  setStatus(status, "The two passphrases differ: type the same one twice.", true);
  again.select();
  again.focus();
  return false;
}

/**
 * The lock forms' result line, read out by screen readers when it changes; focusable, for a message the
 * section is drawn again with.
 */
const statusLine = () => h("p", { class: "status", role: "status", testid: "lock-status", tabIndex: -1 });

export function createSettings(context: SettingsContext) {
  /**
   * After a lock change failed: true when it committed all the same, its data moved, and the app went on
   * with the new session (the old databases left, to delete at the next start): the dialog is drawn again
   * for that session, its lock section saying `error`.
   */
  function movedAnyway(before: ReturnType<SettingsContext["session"]>, error: unknown): boolean {
    if (context.session() === before) return false;
    render();
    const status = content.querySelector<HTMLElement>('[data-testid="lock-status"]');
    if (status) {
      // Done, with old data left to delete at the next start: a warning, not a failure.
      setStatus(status, (error as Error).message, "warning");
      // Its form went with the button that had the focus: the message takes it, and is read out.
      status.focus();
    }
    return true;
  }

  /** Change the passphrase, or remove the lock (asked twice). */
  function lockedForms(): HTMLElement {
    const session = context.session();
    const current = secretInput("current-passphrase", "current-password");
    const next = secretInput("new-passphrase", "new-password");
    const nextAgain = secretInput("new-passphrase-again", "new-password");
    const status = statusLine();
    const change = h("button", { type: "submit", testid: "change-passphrase" }, "Change passphrase");
    const form = h(
      "form",
      {},
      field("Current passphrase", current),
      field("New passphrase", next, PASSPHRASE_HINT),
      field("New passphrase again", nextAgain),
      change,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!typedTwice(next, nextAgain, status)) return;
      change.disabled = true;
      setStatus(status, "Changing the passphrase…");
      context.changePassphrase(current.value, next.value).then(
        () => {
          current.value = "";
          next.value = "";
          nextAgain.value = "";
          change.disabled = false;
          setStatus(status, "Passphrase changed.");
          // Disabled while it worked, the button lost the focus to the page.
          change.focus();
        },
        (error: unknown) => {
          if (movedAnyway(session, error)) return;
          if (error instanceof KeyChangeCutError) {
            // Nothing is lost and the next unlock settles it: a warning, not a failure. A retry in this page is
            // refused (the change's record waits for that unlock), so the button stays held and the message,
            // which says to reload, takes the focus (and so the view, on a phone) instead of the passphrase.
            setStatus(status, error.message, "warning");
            status.focus();
            return;
          }
          change.disabled = false;
          setStatus(status, `Could not change it: ${(error as Error).message}`, true);
          current.select();
          current.focus();
        },
      );
    });
    const remove = h("div", { class: "actions" });
    const idle = () =>
      replace(
        remove,
        h("button", { type: "button", class: "danger", testid: "remove-lock", onclick: ask }, "Remove the lock…"),
      );
    function ask(): void {
      const yes = h(
        "button",
        {
          type: "button",
          class: "danger",
          testid: "confirm-remove-lock",
          onclick: () => {
            // Both held while it runs: a Cancel then Yes again would start a second removal behind this one.
            yes.disabled = no.disabled = true;
            setStatus(status, "Decrypting…");
            context.removeLock().then(
              () => render(),
              (error: unknown) => {
                if (movedAnyway(session, error)) return;
                setStatus(status, `Could not remove the lock: ${(error as Error).message}`, true);
                // Still asked: Yes may be tried again. The focus goes to Cancel, as when the question was
                // first asked.
                if (!yes.isConnected) return;
                yes.disabled = no.disabled = false;
                no.focus();
              },
            );
          },
        },
        "Yes, store everything unencrypted",
      );
      const no = h("button", { type: "button", onclick: () => idle() }, "Cancel");
      replace(remove, yes, no);
      no.focus();
    }
    remove.addEventListener("keydown", (event) => {
      const yes = remove.querySelector<HTMLButtonElement>('[data-testid="confirm-remove-lock"]');
      // Not while a removal runs (Yes held): the question stays until it ends.
      if (event.key === "Escape" && yes && !yes.disabled) {
        event.preventDefault();
        event.stopPropagation();
        idle();
      }
    });
    idle();
    return h("div", {}, form, remove, status);
  }

  const content = h("div", { class: "settings-body" });
  const dialog = h(
    "dialog",
    { class: "settings", "aria-labelledby": "settings-title" },
    h(
      "header",
      {},
      h("h2", { id: "settings-title" }, "Settings"),
      h(
        "button",
        { class: "icon", type: "button", "aria-label": "Close settings", onclick: () => dialog.close() },
        "✕",
      ),
    ),
    content,
  );
  dialog.addEventListener("click", (event) => {
    // A click on the backdrop closes.
    if (event.target === dialog) dialog.close();
  });

  /**
   * Says why a sync failed. No answer at all may be a server that does not let this page in: the browser
   * hides a refused CORS request as a failed fetch, so both are named, with the setting that lets it in;
   * the transport's words ("Sync server unreachable (GET /hello): Failed to fetch") go on hover.
   */
  function showSyncFailure(status: HTMLElement, error: unknown): void {
    const message = (error as Error).message;
    if ((error as { code?: unknown }).code !== "offline") return setStatus(status, `Could not sync: ${message}`, true);
    setStatus(
      status,
      `Could not sync: the sync server could not be reached. Check that it runs at that address and was started with SYNC_CORS_ORIGINS=${location.origin} (without it, it does not let this page in).`,
      true,
      message,
    );
  }

  function syncSection(): HTMLElement {
    const session = context.session();
    const current = session.syncSettings;
    const url = h("input", {
      type: "url",
      testid: "sync-url",
      value: current.url,
      placeholder: "http://127.0.0.1:8787",
      autocomplete: "off",
    });
    const token = h("input", {
      type: "password",
      testid: "sync-token",
      value: current.token,
      placeholder: "your token",
      autocomplete: "off",
    });
    const status = h("p", { class: "status", testid: "sync-saved" });
    const form = h(
      "form",
      {},
      field(
        "Server URL",
        url,
        `Run one with npm run sync-server, started with SYNC_CORS_ORIGINS=${location.origin} so that this page may call it; another browser profile with the same URL and token is a second device.`,
      ),
      field("Token", token, secretHint(session)),
      h("button", { class: "primary", type: "submit", testid: "sync-save" }, "Save and sync now"),
      status,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      setStatus(status, "Syncing…");
      session
        .setSync({ url: url.value.trim(), token: token.value.trim() })
        .then(() => (url.value.trim() && token.value.trim() ? session.syncNow() : undefined))
        .then(
          () => setStatus(status, url.value.trim() && token.value.trim() ? "Synced." : "Sync off."),
          (error: unknown) => showSyncFailure(status, error),
        );
    });
    return h(
      "section",
      { "aria-labelledby": "sync-h" },
      h("h3", { id: "sync-h" }, "Sync between devices"),
      h(
        "p",
        { class: "muted" },
        "Threads replicate through a sync server you run (on PostgreSQL). Turns written on two devices while apart both stay: the newest is the head, the other a branch in History.",
      ),
      form,
    );
  }

  /** What this demo runs on, and where in the package each feature lives. */
  function aboutSection(): HTMLElement {
    const features: [string, string][] = [
      ["Conversation memory, history, fork (checkpoints)", "src/saver/ — IndexedDBSaver"],
      ["Memories recalled across threads (semantic search)", "src/store/ — IndexedDBStore"],
      ["Passphrase lock (AES-GCM, bound to each row)", "src/serde/encrypted/ — EncryptedSerializer"],
      ["Compact stored values", "src/serde/msgpack/ — MsgpackSerializer"],
      ["One answer at a time per thread, across tabs", "src/runs/ — runOnThread"],
      ["Live updates across tabs", "src/saver/events.ts — saver.subscribe"],
      ["Export and import of a thread", "src/portable/ — exportThread, importThread"],
      ["Sync between devices", "src/sync/, src/sync-server/ — SyncClient, createSyncServer"],
      ["Crash journal (off here)", 'src/journal/ — journal: "opfs"'],
    ];
    return h(
      "section",
      { "aria-labelledby": "about-h", testid: "about" },
      h("h3", { id: "about-h" }, "About"),
      h(
        "p",
        {},
        "This demo runs a LangGraph.js agent in the page on ",
        h(
          "a",
          // The package's README, carried by the demo (demo/readme-page.ts): it opens offline too.
          { href: "readme.html", target: "_blank", rel: "noopener", testid: "readme-link" },
          "langgraph-checkpoint-indexeddb",
        ),
        ", which keeps everything in this browser's IndexedDB. Where each feature lives in the package:",
      ),
      h(
        "table",
        { class: "about-table" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Feature"), h("th", { scope: "col" }, "Code"))),
        h(
          "tbody",
          {},
          ...features.map(([feature, code]) => h("tr", {}, h("td", {}, feature), h("td", {}, h("code", {}, code)))),
        ),
      ),
    );
  }

  /** How long the unlocked app may sit idle before it locks itself. */
  function autoLockField(): HTMLElement {
    const current = autoLockMinutes();
    const select = h(
      "select",
      { testid: "auto-lock" },
      ...AUTO_LOCK_CHOICES.map((minutes) =>
        h(
          "option",
          { value: String(minutes), selected: minutes === current },
          minutes === 0 ? "Never" : minutes === 60 ? "After 1 hour idle" : `After ${minutes} minutes idle`,
        ),
      ),
    );
    select.addEventListener("change", () => {
      setAutoLockMinutes(Number(select.value));
      dispatchEvent(new Event("langgraph-demo:auto-lock-changed"));
    });
    return field("Auto-lock", select, "Locks again (the key leaves memory) after this long without input.");
  }

  function lockSection(): HTMLElement {
    const session = context.session();
    if (session.vault.locked) {
      return h(
        "section",
        { "aria-labelledby": "lock-h" },
        h("h3", { id: "lock-h" }, "Passphrase lock"),
        h(
          "p",
          {},
          icon("lock"),
          " Locked: threads, memories, titles and settings are encrypted at rest (AES-GCM, key derived from your passphrase).",
        ),
        h("button", { type: "button", onclick: () => context.lockNow() }, "Lock now"),
        autoLockField(),
        lockedForms(),
      );
    }
    const passphrase = secretInput("passphrase", "new-password");
    const again = secretInput("passphrase-again", "new-password");
    const status = statusLine();
    const button = h("button", { class: "primary", type: "submit", testid: "lock" }, "Lock with passphrase");
    const form = h(
      "form",
      {},
      h(
        "p",
        {},
        "Encrypt everything at rest. Your threads and memories are copied into encrypted databases and the unencrypted ones are deleted. On the next load, the passphrase is asked for. There is no recovery if you forget it.",
      ),
      field("Passphrase", passphrase, PASSPHRASE_HINT),
      field("Passphrase again", again),
      button,
      status,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!typedTwice(passphrase, again, status)) return;
      button.disabled = true;
      setStatus(status, "Encrypting…");
      context.lock(passphrase.value).then(
        () => {
          passphrase.value = "";
          again.value = "";
          render();
        },
        (error: unknown) => {
          if (movedAnyway(session, error)) return;
          button.disabled = false;
          setStatus(status, `Could not lock: ${(error as Error).message}`, true);
          passphrase.select();
          passphrase.focus();
        },
      );
    });
    return h("section", { "aria-labelledby": "lock-h" }, h("h3", { id: "lock-h" }, "Passphrase lock"), form);
  }

  function render(): void {
    replace(
      content,
      lockSection(),
      modelSection(context.session()),
      syncSection(),
      storageSection(context, (threadId) => {
        // The copy is open behind the dialog: close it, there is nothing more to do here.
        dialog.close();
        context.openThread(threadId);
      }),
      memorySection(context),
      aboutSection(),
    );
  }

  return {
    el: dialog,
    open(): void {
      render();
      dialog.showModal();
    },
  };
}
