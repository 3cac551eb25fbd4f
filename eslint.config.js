// ESLint 9 flat config (`npm run lint`, after oxlint).
//
// Every rule here runs without type information: the two rules that need types, floating and
// misused promises (the bug class an IndexedDB library is most exposed to: a transaction that
// auto-commits while a promise is left behind), run in oxlint instead (.oxlintrc.json), through
// tsgolint, a Go port of TypeScript's checker, over the same tsconfig.json program: the same
// findings for a fraction of the CPU (figures in docs/testing.md). A deliberate exception to them is
// an `oxlint-disable-next-line typescript/no-floating-promises` comment, not an `eslint-disable`
// one. TypeScript gets typescript-eslint's recommended set, plain JS (scripts, the Chromium
// launcher, the Firefox runner) ESLint's own; eslint-config-prettier comes last: layout is
// Prettier's job.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import prettier from "eslint-config-prettier/flat";
import globals from "globals";
import tseslint from "typescript-eslint";

/** Test code: `*.test.ts` beside modules, and whatever lives under test/ and e2e/. */
const TEST_FILES = ["**/*.test.ts", "test/**", "e2e/**", "src/test-support/**"];

export default defineConfig(
  // The same list as .oxlintrc.json's ignorePatterns.
  {
    ignores: [
      "**/dist/",
      "coverage/",
      "test-results/",
      "e2e/screenshots/",
      "**/__screenshots__/",
      ".vite/",
      "test/scratch-rel/",
      ".scratch-portable/",
      // scripts/oxlint-fires.test.mjs plants a floating promise there for oxlint, for a second.
      "oxlint-probe-*/",
    ],
  },
  { linterOptions: { reportUnusedDisableDirectives: "error" } },

  js.configs.recommended,

  // TypeScript: the recommended set, which needs no types.
  {
    files: ["**/*.ts", "**/*.tsx", "**/*.mts", "**/*.cts"],
    extends: [tseslint.configs.recommended],
    rules: {
      // The code base already writes `import type` / inline `type` (verbatimModuleSyntax); keep it so.
      "@typescript-eslint/consistent-type-imports": [
        "error",
        { prefer: "type-imports", fixStyle: "inline-type-imports", disallowTypeAnnotations: false },
      ],
      "@typescript-eslint/no-import-type-side-effects": "error",
      // Unused names are also tsc's job (noUnusedLocals, noUnusedParameters); `_`-prefixed ones are deliberate.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
      ],
    },
  },
  // Plain JS: Node scripts, no types.
  {
    files: ["**/*.js", "**/*.mjs", "**/*.cjs"],
    languageOptions: { globals: { ...globals.node } },
  },

  // Tests, helpers, the demo and the benchmarks: `any` is allowed where it is the point (bad input,
  // mocks, poking at internals); the library's own code keeps the rule as an error.
  {
    files: [...TEST_FILES, "demo/**", "bench/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },

  prettier,
);
