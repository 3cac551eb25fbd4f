// ESLint 9 flat config (`npm run lint`).
//
// TypeScript is linted with type information (typescript-eslint builds one
// program from tsconfig.json), so the rules that need types run too: floating
// and misused promises above all, the bug class an IndexedDB library is most
// exposed to (a transaction that auto-commits while a promise is left behind).
// Plain JS (scripts, the Chromium launcher, the Firefox runner) is linted
// without types. eslint-config-prettier comes last: layout is Prettier's job.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import prettier from "eslint-config-prettier/flat";
import globals from "globals";
import tseslint from "typescript-eslint";

/** Test code: `*.test.ts` beside modules, and whatever lives under test/ and e2e/. */
const TEST_FILES = ["**/*.test.ts", "test/**", "e2e/**", "src/test-support/**"];

export default defineConfig(
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
    ],
  },
  { linterOptions: { reportUnusedDisableDirectives: "error" } },

  js.configs.recommended,

  // TypeScript: the recommended set, plus the type-aware promise rules.
  {
    files: ["**/*.ts", "**/*.tsx", "**/*.mts", "**/*.cts"],
    extends: [tseslint.configs.recommended],
    languageOptions: {
      // `project`, not `projectService`: the same one program (every TypeScript file is in
      // tsconfig.json's include; a file outside it is an error either way) and the same findings,
      // for 16-24% less CPU in the full lint (typescript-eslint#9571: the project service no longer
      // outperforms it).
      parserOptions: { project: ["./tsconfig.json"], tsconfigRootDir: import.meta.dirname },
    },
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
      // A promise nobody awaits or catches: an unhandled rejection, or an IndexedDB transaction that
      // commits before the work it was meant to hold. `void promise` marks a deliberate fire-and-forget.
      "@typescript-eslint/no-floating-promises": ["error", { ignoreVoid: true }],
      // A promise where a boolean or a void callback is expected (if (promise), forEach(async ...)).
      "@typescript-eslint/no-misused-promises": [
        "error",
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
    },
  },
  // A declaration file beside a plain JS module describes it; nothing to lint with types.
  { files: ["**/*.d.mts", "**/*.d.ts"], extends: [tseslint.configs.disableTypeChecked] },

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
