/**
 * An answer's code blocks: a Copy button on each, and syntax highlighting by
 * highlight.js. The highlighter is a chunk of its own, loaded the first time
 * an answer has a code block (most conversations never pay for it); it builds
 * token spans from text, with no `eval` and no inline styles, so the page's
 * Content-Security-Policy holds, and its HTML is sanitized like the rest.
 */
import { h } from "./dom.js";
import { icon } from "./icons.js";
import { renderHighlighted } from "./markdown.js";

type Highlighter = (typeof import("highlight.js/lib/common"))["default"];

let loading: Promise<Highlighter> | undefined;
/** Highlighted HTML per language and text: a thread redraws the same answers often. */
const cache = new Map<string, string>();
const CACHE_SIZE = 200;
/** Longer code is left plain: highlighting it would hold the page up for little. */
const MAX_CODE = 50_000;

/** Copies `text`, then says so on the button for a moment (its word, or its name when it has only an icon). */
export function copyTo(button: HTMLButtonElement, text: () => string): void {
  const word = button.querySelector("span");
  const name = button.getAttribute("aria-label") ?? "";
  navigator.clipboard.writeText(text()).then(
    () => {
      if (word) word.textContent = "Copied";
      else button.setAttribute("aria-label", "Copied");
      button.dataset.copied = "true";
      setTimeout(() => {
        if (word) word.textContent = "Copy";
        else button.setAttribute("aria-label", name);
        delete button.dataset.copied;
      }, 1_500);
    },
    (error: unknown) => console.warn("copy", error),
  );
}

/** The language a fenced block names (```ts gives `language-ts`), if any. */
function languageOf(code: HTMLElement): string | undefined {
  return /(?:^|\s)language-([\w+#.-]+)/.exec(code.className)?.[1];
}

/** Adds a Copy button to each code block under `root`, and highlights them (loading the highlighter once). */
export function decorateCodeBlocks(root: ParentNode): void {
  const codes = [...root.querySelectorAll<HTMLElement>("pre > code")];
  for (const code of codes) {
    const pre = code.parentElement!;
    // An icon only: a word here would become part of the answer's text.
    const copy = h(
      "button",
      { type: "button", class: "tool copy-code", testid: "copy-code", "aria-label": "Copy code", title: "Copy code" },
      icon("copy"),
    );
    copy.addEventListener("click", () => copyTo(copy, () => code.textContent ?? ""));
    const block = h("div", { class: "code-block" });
    const language = languageOf(code);
    if (language) block.dataset.lang = language;
    pre.replaceWith(block);
    block.append(copy, pre);
  }
  if (codes.length) void highlight(codes).catch((error: unknown) => console.warn("highlight", error));
}

async function highlight(codes: HTMLElement[]): Promise<void> {
  const hljs = await (loading ??= import("highlight.js/lib/common").then((module) => module.default));
  for (const code of codes) {
    const text = code.textContent ?? "";
    if (text.length > MAX_CODE) continue;
    const language = languageOf(code);
    const known = language && hljs.getLanguage(language) ? language : undefined;
    const key = `${known ?? ""}\n${text}`;
    let html = cache.get(key);
    if (html === undefined) {
      html = known
        ? hljs.highlight(text, { language: known, ignoreIllegals: true }).value
        : hljs.highlightAuto(text).value;
      cache.set(key, html);
      if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
    }
    code.replaceChildren(renderHighlighted(html));
    code.classList.add("hljs");
  }
}
