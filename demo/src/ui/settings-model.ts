/**
 * The settings dialog's Model section: the built-in assistant, or an
 * OpenAI-compatible endpoint, whose models are listed from the endpoint's
 * `GET /models` when it offers a list (a pick list then, a text field
 * otherwise). The choice is saved with the settings (sealed like them).
 */
import { listModels, PolicyRefusal } from "../model.js";
import type { Session } from "../session.js";
import type { ModelSettings } from "../settings.js";
import { field, h, replace, setStatus } from "./dom.js";

/**
 * Where a secret field's value is kept. Unlocked, there is no key to
 * encrypt it with (a key kept next to it in the same storage would hide
 * nothing), so it says so plainly.
 */
export function secretHint(session: Session): string {
  return session.vault.locked
    ? "Kept in this browser only, encrypted with your passphrase."
    : "Not encrypted: stored as plain text in this browser, readable by anyone with access to this browser profile. Lock the app with a passphrase to encrypt it.";
}

/** The Model section of the current session's settings. */
export function modelSection(session: Session): HTMLElement {
  const current = session.model;
  const provider = h(
    "select",
    { name: "provider" },
    h("option", { value: "local", selected: current.provider === "local" }, "Built-in local assistant (offline)"),
    h("option", { value: "openai", selected: current.provider === "openai" }, "OpenAI-compatible endpoint"),
  );
  const baseUrl = h("input", { type: "url", value: current.baseUrl, placeholder: "https://api.openai.com/v1" });
  const model = h("input", { value: current.model, placeholder: "gpt-4o-mini" });
  const picker = h("select", { testid: "model-select" });
  const apiKey = h("input", { type: "password", value: current.apiKey, autocomplete: "off", placeholder: "sk-…" });
  const typed = field("Model", model);
  const picked = field("Model", picker);
  const listStatus = h("p", { class: "status", testid: "models-status" });
  const list = h("button", { type: "button", testid: "list-models", onclick: () => void showList() }, "List models");
  const remote = h(
    "div",
    { class: "remote-fields" },
    field("Base URL", baseUrl),
    field("API key", apiKey, secretHint(session)),
    typed,
    picked,
    h("div", { class: "actions" }, list),
    listStatus,
  );
  const status = h("p", { class: "status", role: "status" });

  /** The pick list or the text field, never both; the name chosen carries over. */
  function usePicker(models: string[] | undefined): void {
    const name = typed.hidden ? picker.value : model.value.trim();
    picked.hidden = !models;
    typed.hidden = Boolean(models);
    if (!models) {
      model.value = name;
      return;
    }
    // A name the endpoint does not list (typed, or saved before) stays a choice: nothing is lost.
    const names = name && !models.includes(name) ? [name, ...models] : models;
    replace(picker, ...names.map((id) => h("option", { value: id, selected: id === name }, id)));
  }
  let listing = 0;
  async function showList(): Promise<void> {
    const seq = ++listing;
    list.disabled = true;
    setStatus(listStatus, "Listing the endpoint's models…");
    try {
      const models = await listModels({ baseUrl: baseUrl.value.trim(), apiKey: apiKey.value });
      if (seq !== listing) return;
      usePicker(models);
      setStatus(listStatus, `${models.length} ${models.length === 1 ? "model" : "models"} listed by the endpoint.`);
    } catch (error) {
      if (seq !== listing) return;
      usePicker(undefined);
      // A fetch that failed (no server, a wrong URL, no CORS) is not an endpoint without a list.
      // A refusal or an endpoint that cannot be reached is a failure; one without a list is not (the model is typed).
      // The browser's words for a fetch that failed ("Failed to fetch") tell a user nothing: on hover only.
      setStatus(
        listStatus,
        error instanceof PolicyRefusal
          ? error.message
          : error instanceof TypeError
            ? "Could not reach the endpoint: check the base URL, that its server runs, and that it lets this page in (CORS)."
            : `The endpoint offers no list of models (${(error as Error).message}): type the model's name.`,
        error instanceof PolicyRefusal || error instanceof TypeError,
        error instanceof TypeError ? error.message : "",
      );
    } finally {
      if (seq === listing) list.disabled = false;
    }
  }
  // Another endpoint may offer other models: back to the text field until it is listed.
  for (const input of [baseUrl, apiKey])
    input.addEventListener("change", () => {
      listing++;
      list.disabled = false;
      setStatus(listStatus, "");
      usePicker(undefined);
    });
  usePicker(undefined);
  const sync = () => (remote.hidden = provider.value !== "openai");
  provider.addEventListener("change", sync);
  sync();
  // An endpoint chosen before: its list is read again, so the saved model shows among its choices.
  if (current.provider === "openai") void showList();

  const form = h(
    "form",
    {},
    field("Provider", provider),
    remote,
    h("button", { class: "primary", type: "submit" }, "Save model"),
    status,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = (typed.hidden ? picker.value : model.value).trim();
    const next: ModelSettings = {
      provider: provider.value === "openai" ? "openai" : "local",
      baseUrl: baseUrl.value.trim() || current.baseUrl,
      model: name || current.model,
      apiKey: apiKey.value,
    };
    session.setModel(next).then(
      () => setStatus(status, "Saved."),
      (error: unknown) => setStatus(status, `Could not save: ${(error as Error).message}`, true),
    );
  });
  return h("section", { "aria-labelledby": "model-h" }, h("h3", { id: "model-h" }, "Model"), form);
}
