/**
 * The package's README as a page of the demo (`/readme.html`), where the
 * About panel links: package.json names no repository to link to, and the
 * package is not necessarily on npm, so the demo carries the README itself.
 * Rendered from ../README.md by `marked` when the demo is built (and on each
 * request by the dev server), under the same Content-Security-Policy as the
 * app: no script, and the styles in a file of their own.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Marked } from "marked";
import type { Plugin } from "vite";
import { CSP_META } from "./csp.js";

/** Where the About panel links (relative to the app's page). */
export const README_PAGE = "readme.html";
const README_CSS = "readme.css";
const readmePath = fileURLToPath(new URL("../README.md", import.meta.url));

const STYLES = `:root { color-scheme: light dark; }
body { max-width: 52rem; margin: 2rem auto; padding: 0 1rem; font: 16px/1.55 system-ui, sans-serif; }
pre { overflow-x: auto; padding: 0.75rem; border: 1px solid #8884; border-radius: 6px; }
code { font: 0.9em ui-monospace, monospace; }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid #8884; padding: 0.3rem 0.6rem; text-align: left; }
`;

/**
 * The README's HTML. Links to files of the repository (docs/, examples/)
 * have nothing to open beside the demo: they become their path, in code.
 */
export function readmeHtml(markdown: string): string {
  const marked = new Marked({ gfm: true, async: false });
  marked.use({
    renderer: {
      link({ href, tokens }) {
        const text = this.parser.parseInline(tokens);
        if (/^(https?:|mailto:|#)/.test(href)) return false;
        return `${text} (<code>${href.replace(/[<>&"]/g, "")}</code>)`;
      },
    },
  });
  const body = marked.parse(markdown) as string;
  const title = /^#\s+(.+)$/m.exec(markdown)?.[1] ?? "README";
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta http-equiv="Content-Security-Policy" content="${CSP_META}" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title} · README</title>
    <link rel="stylesheet" href="${README_CSS}" />
  </head>
  <body>
    <main>${body}</main>
  </body>
</html>
`;
}

/** The Vite plugin: the two files in the build, and served by the dev server. */
export function readmePage(): Plugin {
  return {
    name: "demo-readme-page",
    configureServer(server) {
      server.middlewares.use((request, response, next) => {
        const path = request.url?.split("?")[0];
        if (path !== `/${README_PAGE}` && path !== `/${README_CSS}`) return next();
        const html = path === `/${README_PAGE}`;
        response.setHeader("content-type", html ? "text/html; charset=utf-8" : "text/css; charset=utf-8");
        response.end(html ? readmeHtml(readFileSync(readmePath, "utf8")) : STYLES);
      });
    },
    generateBundle() {
      this.emitFile({ type: "asset", fileName: README_PAGE, source: readmeHtml(readFileSync(readmePath, "utf8")) });
      this.emitFile({ type: "asset", fileName: README_CSS, source: STYLES });
    },
  };
}
