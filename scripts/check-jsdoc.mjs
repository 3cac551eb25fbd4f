// Fails when a module of src/ exports a declaration without a JSDoc comment.
// The rule: JSDoc on every export, so an editor's hover
// and the generated .d.ts explain each name. Re-exports (`export { x } from`)
// carry the doc of their source; of an overloaded function, the first
// signature needs it.
//   node scripts/check-jsdoc.mjs
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { readSources } from "./check-layers.mjs";

/**
 * The exported top-level declarations of `source` that have no JSDoc, as
 * `{ line, name }` (line 1-based).
 * @param {string} fileName
 * @param {string} source
 * @returns {{ line: number, name: string }[]}
 */
export function undocumentedExports(fileName, source) {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const missing = [];
  let previousFunction;
  for (const statement of file.statements) {
    const exported = ts.getModifiers?.(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) {
      previousFunction = undefined;
      continue;
    }
    let name;
    if (ts.isVariableStatement(statement)) {
      name = statement.declarationList.declarations.map((d) => d.name.getText(file)).join(", ");
    } else if (
      ts.isFunctionDeclaration(statement) ||
      ts.isClassDeclaration(statement) ||
      ts.isInterfaceDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) ||
      ts.isEnumDeclaration(statement)
    ) {
      name = statement.name?.getText(file) ?? "default";
    } else {
      continue;
    }
    // Later overloads and the implementation of a documented first signature share its doc.
    const sameFunction = ts.isFunctionDeclaration(statement) && previousFunction === name;
    previousFunction = ts.isFunctionDeclaration(statement) ? name : undefined;
    if (sameFunction) continue;
    const documented = ts.getJSDocCommentsAndTags(statement).length > 0;
    if (!documented) {
      missing.push({ line: file.getLineAndCharacterOfPosition(statement.getStart(file)).line + 1, name });
    }
  }
  return missing;
}

/** Checks every module of src/ and prints the result; sets a failing exit code on a missing doc. */
export function main() {
  const root = fileURLToPath(new URL("..", import.meta.url));
  let count = 0;
  for (const [path, source] of readSources(join(root, "src"))) {
    if (/\.test\.ts$/.test(path) || !/\.ts$/.test(path)) continue;
    for (const { line, name } of undocumentedExports(path, source)) {
      console.error(`src/${path}:${line}: export ${name} has no JSDoc comment`);
      count++;
    }
  }
  if (count > 0) process.exitCode = 1;
  else console.log("check-jsdoc: every export of src/ has a JSDoc comment");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
