/**
 * A thread's custom instructions on screen: the note above its conversation
 * that shows them as such (with Edit), and the dialog that edits them,
 * opened from the thread's menu in the sidebar or from the note.
 */
import { h, setStatus } from "./dom.js";

/** The note above the conversation; hidden while the thread has no instructions. */
export function createInstructionsNote(onEdit: () => void) {
  const text = h("p", { class: "instructions-text", testid: "instructions-text" });
  const el = h(
    "aside",
    { class: "instructions-note", testid: "instructions-note", "aria-label": "Custom instructions", hidden: true },
    h("strong", {}, "Custom instructions for this thread"),
    text,
    h("button", { type: "button", testid: "instructions-edit", onclick: () => onEdit() }, "Edit"),
  );
  return {
    el,
    /** Shows the thread's instructions, or hides the note for none. */
    show(instructions: string | undefined): void {
      el.hidden = !instructions;
      text.textContent = instructions ?? "";
    },
  };
}

/** The editor: `save` keeps the text for the thread (blank removes it) and may fail with a message. */
export function createInstructionsDialog(save: (threadId: string, text: string) => Promise<void>) {
  const heading = h("h2", { id: "instructions-title" });
  const input = h("textarea", {
    id: "instructions-input",
    testid: "instructions-input",
    rows: 6,
    placeholder: "e.g. Answer briefly, in French.",
  });
  const status = h("p", { class: "status", role: "status" });
  const submit = h("button", { class: "primary", type: "submit", testid: "instructions-save" }, "Save");
  const form = h(
    "form",
    {},
    h(
      "label",
      { class: "field" },
      h("span", {}, "Instructions"),
      input,
      h(
        "small",
        { class: "muted" },
        "Sent to the model as a system message before this thread's conversation, on every answer. Leave empty for none. The built-in local assistant does not read them (it answers by rules): choose a model in Settings to see them followed.",
      ),
    ),
    h("div", { class: "actions" }, submit, h("button", { type: "button", onclick: () => dialog.close() }, "Cancel")),
    status,
  );
  const dialog = h(
    "dialog",
    { class: "instructions-dialog", "aria-labelledby": "instructions-title" },
    h("header", {}, heading),
    form,
  );
  let threadId = "";
  /** What had the focus when the editor opened: it gets it back when the editor closes, however it closes. */
  let opener: HTMLElement | undefined;
  dialog.addEventListener("close", () => {
    if (opener?.isConnected) opener.focus();
    opener = undefined;
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit.disabled = true;
    setStatus(status, "Saving…");
    save(threadId, input.value).then(
      () => {
        submit.disabled = false;
        dialog.close();
      },
      (error: unknown) => {
        submit.disabled = false;
        setStatus(status, `Could not save: ${(error as Error).message}`, true);
      },
    );
  });
  return {
    el: dialog,
    /** Opens the editor on a thread's current instructions. */
    open(id: string, title: string, current: string): void {
      threadId = id;
      opener = document.activeElement instanceof HTMLElement ? document.activeElement : undefined;
      heading.textContent = `Instructions for “${title}”`;
      input.value = current;
      setStatus(status, "");
      dialog.showModal();
      input.focus();
    },
  };
}
