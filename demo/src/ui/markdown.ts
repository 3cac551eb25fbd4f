/**
 * Markdown for the assistant's answers: parsed by `marked`, then cleaned by
 * DOMPurify before it touches the page. A model's text is untrusted input
 * (an endpoint, or a prompt injection through a tool result, can put any HTML
 * in it), so nothing is inserted that DOMPurify has not sanitized. User
 * messages never come here: they stay plain text. Previews (History) take an
 * answer's text from the same parser's tokens, without the Markdown around it.
 */
import DOMPurify from "dompurify";
import { Marked, type Token, type Tokens } from "marked";

// Its own instance: options set here can't leak into another user of `marked`.
const parser = new Marked({ gfm: true, breaks: true, async: false });

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

// No media from a model's answer (a request to any address it names): an image shows as a link to it, by its
// text, which the sanitizer below keeps only for a web address. Dropped, it took its text with it.
parser.use({
  renderer: {
    image({ href, text }) {
      return `<a href="${escapeHtml(href)}">${escapeHtml(text || "image")}</a>`;
    },
  },
});

const purify = DOMPurify(window);
// Links open outside the app, without giving the new page a handle on this one.
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/**
 * Classes kept: a code block's language from the Markdown fence (what the
 * highlighter reads), and highlight.js's own token classes on its spans.
 * Anything else a model writes in `class` goes.
 */
const LANGUAGE_CLASS = /^language-[\w+#.-]{1,40}$/;
const TOKEN_CLASSES = /^(?:hljs-[\w-]+|[\w-]+_)(?: (?:hljs-[\w-]+|[\w-]+_))*$/;
purify.addHook("uponSanitizeAttribute", (node, data) => {
  if (data.attrName !== "class") return;
  const tag = node.tagName;
  data.keepAttr =
    (tag === "CODE" && LANGUAGE_CLASS.test(data.attrValue)) || (tag === "SPAN" && TOKEN_CLASSES.test(data.attrValue));
});

const SANITIZE = {
  // Text formatting only: no forms, media or styles from a model's answer.
  ALLOWED_TAGS: [
    "p",
    "br",
    "strong",
    "em",
    "del",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "span",
  ],
  ALLOWED_ATTR: ["href", "title", "start", "align", "class"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
};

/**
 * `make` with its results kept per text, the least recently used going first
 * past `size`: a long thread redraws the same answers often, and parsing each
 * again costs.
 */
function perText<T>(size: number, make: (text: string) => T): (text: string) => T {
  const cache = new Map<string, T>();
  return (text) => {
    const hit = cache.get(text);
    if (hit !== undefined) {
      // Move this one to the end.
      cache.delete(text);
      cache.set(text, hit);
      return hit;
    }
    const made = make(text);
    cache.set(text, made);
    if (cache.size > size) cache.delete(cache.keys().next().value!);
    return made;
  };
}

const sanitizedHtml = perText(500, (text) => purify.sanitize(parser.parse(text) as string, SANITIZE).trim());

/** Tokens after which the text goes on as a new word (blocks, and a line break). */
const SEPARATED = new Set(["space", "code", "heading", "hr", "blockquote", "list", "table", "paragraph", "br"]);

/** The text `tokens` show, without their Markdown: links and images by their text, raw HTML left out. */
function tokensText(tokens: Token[]): string {
  let out = "";
  for (const token of tokens) {
    if (token.type === "html") continue;
    if (token.type === "list") out += (token as Tokens.List).items.map((item) => tokensText(item.tokens)).join(" ");
    else if (token.type === "table") {
      const table = token as Tokens.Table;
      out += [table.header, ...table.rows].flatMap((cells) => cells.map((cell) => tokensText(cell.tokens))).join(" ");
    } else if ("tokens" in token && token.tokens) out += tokensText(token.tokens);
    else if ("text" in token && typeof token.text === "string") out += token.text;
    if (SEPARATED.has(token.type)) out += " ";
  }
  return out;
}

/**
 * An answer's text as the reader sees it rendered (`**bold**` as "bold", a
 * heading without its `#`, code without backticks), whitespace kept as is:
 * for one-line previews. Read from `marked`'s tokens, as the answer is parsed.
 */
export const markdownText = perText(500, (text) => tokensText(parser.lexer(text)));

/** The answer's text as sanitized DOM nodes. */
export function renderMarkdown(text: string): DocumentFragment {
  // A <template> parses without running anything (no scripts, no image loads) before the nodes are adopted.
  const template = document.createElement("template");
  template.innerHTML = sanitizedHtml(text);
  return template.content;
}

/** A highlighter's HTML (token spans only) as sanitized DOM: it passes DOMPurify like every other HTML here. */
export function renderHighlighted(html: string): DocumentFragment {
  const template = document.createElement("template");
  template.innerHTML = purify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"] });
  return template.content;
}
