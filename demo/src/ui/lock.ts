/** The lock screen: asks for the passphrase before anything is decrypted. */
import { h } from "./dom.js";
import { icon } from "./icons.js";

export interface LockScreenActions {
  /** Rejects when the passphrase is wrong (the message is shown). */
  unlock(passphrase: string): Promise<void>;
  /** Deletes every database of the app and starts afresh. */
  erase(): Promise<void>;
  /** Why this tab is at the lock screen, when it did not lock itself (another tab, auto-lock). */
  reason?: string;
}

/**
 * "Erase all data", asked twice: the first press shows what it does and a
 * second, explicit button; Cancel or Escape takes it back.
 */
function eraseControls(unlockButton: HTMLButtonElement, actions: Pick<LockScreenActions, "erase">): HTMLElement {
  const slot = h("div", { class: "erase" });
  const ask = (): void => {
    const erase = h(
      "button",
      {
        type: "button",
        class: "danger",
        testid: "confirm-erase",
        onclick: () => {
          unlockButton.disabled = true;
          erase.disabled = true;
          void actions.erase();
        },
      },
      "Yes, erase everything",
    );
    const cancel = h("button", { type: "button", onclick: () => idle(true) }, "Cancel");
    slot.replaceChildren(
      h(
        "p",
        { class: "error" },
        "Every thread, memory and setting in this browser will be deleted. This cannot be undone.",
      ),
      h("div", { class: "actions" }, erase, cancel),
    );
    slot.onkeydown = (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        idle(true);
      }
    };
    cancel.focus();
  };
  const idle = (focus: boolean): void => {
    const start = h("button", { type: "button", class: "danger", testid: "erase", onclick: ask }, "Erase all data");
    slot.onkeydown = null;
    slot.replaceChildren(start);
    if (focus) start.focus();
  };
  idle(false);
  return slot;
}

export function createLockScreen(actions: LockScreenActions): HTMLElement {
  const input = h("input", {
    id: "unlock-passphrase",
    type: "password",
    testid: "unlock-passphrase",
    autocomplete: "current-password",
    required: true,
  });
  const button = h("button", { class: "primary", type: "submit", testid: "unlock" }, "Unlock");
  const errorSlot = h("div", { class: "error-slot" });
  const form = h(
    "form",
    { class: "lock-card" },
    h("h1", {}, icon("lock"), " Locked"),
    actions.reason ? h("p", { class: "muted", testid: "lock-reason" }, actions.reason) : undefined,
    h("p", {}, "Your threads and memories are encrypted in this browser. Enter your passphrase to open them."),
    h("label", { class: "field", for: "unlock-passphrase" }, h("span", {}, "Passphrase")),
    input,
    button,
    errorSlot,
    h(
      "details",
      { class: "forgot" },
      h("summary", {}, "Forgot your passphrase?"),
      h("p", {}, "The data cannot be recovered without it. You can erase it and start again."),
      eraseControls(button, actions),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    button.disabled = true;
    button.textContent = "Unlocking…";
    errorSlot.replaceChildren();
    actions.unlock(input.value).catch((error: unknown) => {
      button.disabled = false;
      button.textContent = "Unlock";
      errorSlot.replaceChildren(
        h("p", { class: "error", role: "alert", testid: "unlock-error" }, (error as Error).message),
      );
      input.select();
      input.focus();
    });
  });
  queueMicrotask(() => input.focus());
  return h("main", { class: "lock-screen" }, form);
}

/**
 * The app was locked, its encrypted data is here, but the lock record (the
 * passphrase's salt and check value) is gone: nothing is opened, neither the
 * encrypted data (the passphrase cannot be checked) nor plain databases
 * beside it (what the user typed would be stored unencrypted).
 */
export function createMissingLockScreen(actions: { erase(): Promise<void>; retry(): void }): HTMLElement {
  const retry = h("button", { class: "primary", type: "button", onclick: () => actions.retry() }, "Try again");
  return h(
    "main",
    { class: "lock-screen" },
    h(
      "div",
      { class: "lock-card", role: "alert", testid: "missing-lock" },
      h("h1", {}, icon("lock"), " Lock record missing"),
      h(
        "p",
        {},
        "This app was locked with a passphrase and its encrypted threads and memories are still in this browser, " +
          "but the lock record that opens them (its salt and check value) has been deleted. Nothing was opened, " +
          "and nothing you type is stored until this is settled.",
      ),
      h(
        "p",
        {},
        "If another tab is changing the lock, wait and try again. Otherwise the encrypted data cannot be opened " +
          "without the record: erase everything to start again.",
      ),
      h("div", { class: "actions" }, retry),
      eraseControls(retry, actions),
    ),
  );
}

/**
 * A banner over the app: what opening the vault found (rows it did not seal, refused; a passphrase change
 * cut short, settled), each item saying which.
 */
export function vaultNotice(problems: readonly string[]): HTMLElement {
  const notice: HTMLElement = h(
    "div",
    { class: "vault-notice", role: "alert", testid: "vault-problem" },
    h("p", {}, icon("lock"), " About the data stored in this browser:"),
    h("ul", {}, ...problems.map((problem) => h("li", {}, problem))),
    h("button", { type: "button", onclick: () => notice.remove() }, "Dismiss"),
  );
  return notice;
}
