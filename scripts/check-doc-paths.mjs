// Fails when a markdown file or a code comment sends a reader nowhere: a file
// path that does not exist, a markdown link to a missing file, or a link to a
// heading that its target does not have. The docs and comments point readers
// (and reviewers checking a claim) at modules, tests and docs by path, and
// files move; only a check keeps those pointers true.
//
// What is read: every `.md` file of the repository (README, docs/, and the
// READMEs of demo/ and test/golden/), and the comments of every TypeScript and
// JavaScript file under CODE_ROOTS. Links to other sites are not fetched.
//   node scripts/check-doc-paths.mjs
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import GithubSlugger from "github-slugger";
import { marked } from "marked";
import ts from "typescript";

/** Top-level folders whose paths the docs cite from the repository root. */
const ROOTS = ["src", "test", "bench", "demo", "e2e", "scripts", "docs", "examples"];

/** Folders whose code comments are read. */
const CODE_ROOTS = ["src", "scripts", "test", "bench", "e2e", "demo", "examples"];

/** Folders never read: installed, built or generated files. */
const SKIPPED = new Set(["node_modules", "dist", "coverage", ".git"]);

/** Extensions that make a word a file name. */
const FILE_EXTENSIONS = ["ts", "mts", "mjs", "js", "md", "json", "html", "css", "sh"];

/**
 * Repository paths cited in `text` from the repository root: `root/…` with a
 * file extension or a trailing slash, outside URLs; globs and brace lists are
 * skipped (they name patterns, not files).
 * @param {string} text
 * @returns {string[]}
 */
export function citedPaths(text) {
  const found = new Set();
  const pattern = new RegExp(String.raw`(?<![\w./:-])(?:${ROOTS.join("|")})/[\w./{},*-]*[\w/]`, "g");
  for (const [path] of text.matchAll(pattern)) {
    if (/[*{}]/.test(path)) continue;
    // A bare folder name without a slash after it ("see src/saver") is ambiguous with prose; files and folders/ are not.
    if (!/\.\w+$/.test(path) && !path.endsWith("/")) continue;
    found.add(path);
  }
  return [...found];
}

/**
 * File names cited in `text` relative to some folder (`saver/put.ts`,
 * `./index.ts`, `core/errors.ts`), besides the rooted paths of {@link citedPaths}.
 * A value after `=` (`REPORT=out.json`) is an example, not a citation.
 * A bare `name.js` is skipped: in prose it names a library ("LangGraph.js")
 * far more often than a file of this TypeScript code base.
 * @param {string} text
 * @returns {string[]}
 */
export function citedFiles(text) {
  const found = new Set(citedPaths(text));
  const pattern = new RegExp(
    String.raw`(?<![\w.@/:$=-])(?:\.{1,2}/)*(?:[\w-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:${FILE_EXTENSIONS.join("|")})(?![\w/-])`,
    "g",
  );
  for (const [path] of text.matchAll(pattern)) {
    if (!path.includes("/") && path.endsWith(".js")) continue;
    if (/^(?:\.{1,2}\/)*(?:dist|node_modules)\//.test(path)) continue; // built or installed, not in the repository
    found.add(path);
  }
  return [...found];
}

/**
 * The comments of a TypeScript or JavaScript source, each with its line. The
 * file is parsed, so strings, templates and regular expressions that contain
 * `//` or `/*` are not mistaken for comments.
 * @param {string} fileName used to pick the script kind
 * @param {string} text
 * @returns {{ line: number, text: string }[]}
 */
export function sourceComments(fileName, text) {
  const kind = /\.m?ts$/.test(fileName) ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, kind);
  // Blank every literal (same length, newlines kept); what looks like a comment afterwards is one.
  const chars = text.split(""); // UTF-16 units, as the parser's positions count
  const blank = (start, end) => {
    for (let i = start; i < end; i++) if (chars[i] !== "\n") chars[i] = " ";
  };
  const visit = (node) => {
    if (ts.isLiteralKind(node.kind) || ts.isTemplateLiteralKind(node.kind)) blank(node.getStart(source), node.end);
    ts.forEachChild(node, visit);
  };
  visit(source);
  const blanked = chars.join("");
  const comments = [];
  for (const match of blanked.matchAll(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g)) {
    comments.push({ line: source.getLineAndCharacterOfPosition(match.index).line + 1, text: match[0] });
  }
  return comments;
}

/**
 * Whether a path cited in `file` names something that exists: from the
 * repository root, from the citing file's folder or one of its parents
 * (`saver/put.ts` in a comment of src/journal/), or from src/ (the docs
 * name modules as the layout does, relative to src/). A `.js` path also
 * matches its `.ts` source, as TypeScript's imports do.
 * @param {string} root
 * @param {string} file the citing file, relative to `root`
 * @param {string} path
 */
export function resolves(root, file, path) {
  const candidates = path.endsWith(".js") ? [path, path.replace(/\.js$/, ".ts")] : [path];
  const bases = [join(root, "src")];
  for (let dir = join(root, dirname(file)); ; dir = dirname(dir)) {
    bases.push(dir);
    if (relative(root, dir) === "" || dir === dirname(dir)) break;
  }
  return bases.some((base) => candidates.some((candidate) => existsSync(join(base, candidate))));
}

/**
 * The link targets of a markdown text (links and images), as written.
 * @param {string} markdown
 * @returns {string[]}
 */
export function markdownLinks(markdown) {
  const links = [];
  marked.walkTokens(marked.lexer(markdown), (token) => {
    if (token.type === "link" || token.type === "image") links.push(token.href);
  });
  return links;
}

/**
 * The anchors a markdown file's headings get on GitHub (`## Quick start` → `quick-start`).
 * @param {string} markdown
 * @returns {Set<string>}
 */
export function headingAnchors(markdown) {
  const slugger = new GithubSlugger();
  const anchors = new Set();
  const plain = (tokens) => tokens.map((token) => (token.tokens ? plain(token.tokens) : token.text)).join("");
  for (const token of marked.lexer(markdown)) {
    if (token.type === "heading") anchors.add(slugger.slug(plain(token.tokens)));
  }
  return anchors;
}

/**
 * What is wrong with the links of one markdown file: targets that do not exist
 * (relative to the file) and anchors that the target's headings do not make.
 * @param {string} root
 * @param {string} file relative to `root`
 * @param {string} markdown its text
 * @returns {string[]} one line per problem
 */
export function brokenLinks(root, file, markdown) {
  const problems = [];
  for (const href of markdownLinks(markdown)) {
    if (/^[a-z][a-z\d+.-]*:|^\/\//i.test(href)) continue; // another site (https:, mailto:): not fetched
    const [rawPath, anchor] = href.split("#", 2);
    const path = decodeURIComponent(rawPath);
    const target =
      path === "" ? join(root, file) : path.startsWith("/") ? join(root, path) : join(root, dirname(file), path);
    if (!existsSync(target)) {
      problems.push(`links to ${href}, which does not exist`);
      continue;
    }
    if (anchor === undefined || !target.endsWith(".md")) continue;
    if (!headingAnchors(readFileSync(target, "utf8")).has(anchor)) {
      problems.push(`links to ${href}, but ${relative(root, target)} has no heading with that anchor`);
    }
  }
  return problems;
}

/**
 * The cited paths of each file that resolve to nothing (see {@link resolves}):
 * the whole text of markdown files, the comments of code files.
 * @param {string} root
 * @param {string[]} files relative to `root`
 * @returns {{ file: string, line?: number, path: string }[]}
 */
export function missingPaths(root, files) {
  const missing = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8");
    // Parsing is the costly part: a code file whose every cited path resolves needs none.
    const markdown = file.endsWith(".md");
    if (!markdown && citedFiles(text).every((path) => resolves(root, file, path))) continue;
    const parts = markdown ? [{ text }] : sourceComments(file, text);
    for (const part of parts) {
      for (const path of citedFiles(part.text)) {
        if (resolves(root, file, path)) continue;
        const before = part.text.slice(0, part.text.indexOf(path));
        missing.push({ file, line: part.line && part.line + before.split("\n").length - 1, path });
      }
    }
  }
  return missing;
}

/** Files under `dir` (relative to `root`) whose names match `pattern`, skipping {@link SKIPPED} folders. */
function filesUnder(root, dir, pattern) {
  const found = [];
  for (const name of readdirSync(join(root, dir))) {
    if (SKIPPED.has(name)) continue;
    const path = dir === "" ? name : `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) found.push(...filesUnder(root, path, pattern));
    else if (pattern.test(name)) found.push(path);
  }
  return found;
}

/** Checks every markdown file and code comment of the repository and prints the result; sets a failing exit code on a problem. */
export function main() {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const markdown = filesUnder(root, "", /\.md$/);
  const code = CODE_ROOTS.flatMap((dir) => filesUnder(root, dir, /\.(?:m?ts|m?js)$/));
  const problems = [
    ...missingPaths(root, [...markdown, ...code]).map(
      ({ file, line, path }) => `${file}${line ? `:${line}` : ""}: cites ${path}, which does not exist`,
    ),
    ...markdown.flatMap((file) =>
      brokenLinks(root, file, readFileSync(join(root, file), "utf8")).map((problem) => `${file}: ${problem}`),
    ),
  ];
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    process.exitCode = 1;
    return;
  }
  console.log(
    `check-doc-paths: every path and link in ${markdown.length} markdown files and the comments of ${code.length} code files exists`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
