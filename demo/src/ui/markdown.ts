/**
 * Markdown for the assistant's answers: parsed by `marked`, then cleaned by
 * DOMPurify before it touches the page. A model's text is untrusted input
 * (an endpoint, or a prompt injection through a tool result, can put any HTML
 * in it), so nothing is inserted that DOMPurify has not sanitized. User
 * messages never come here: they stay plain text.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";

// Its own instance: options set here can't leak into another user of `marked`.
const parser = new Marked({ gfm: true, breaks: true, async: false });

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

/** Sanitized HTML per text: a long thread redraws the same answers often, and parsing each again costs. */
const cache = new Map<string, string>();
const CACHE_SIZE = 500;

function sanitizedHtml(text: string): string {
  const hit = cache.get(text);
  if (hit !== undefined) {
    // Least recently used goes first: move this one to the end.
    cache.delete(text);
    cache.set(text, hit);
    return hit;
  }
  const html = purify.sanitize(parser.parse(text) as string, SANITIZE).trim();
  cache.set(text, html);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return html;
}

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
