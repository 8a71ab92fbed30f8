import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";

// Layer rules (DESIGN.md): the engine imports nothing of the platform; browser code imports
// nothing of server/; the platform enters the engine through its public face only.
const restrict = (...patterns) => ["error", { patterns }];
const engineFace = { regex: "(^|/)qrag/(?!(index|runtime)\\.ts$)", message: "the platform enters the engine through server/qrag/index.ts (or runtime.ts for training)" };
const platformPackages = { regex: "^(next(/.*)?|react(-dom)?(/.*)?|socket\\.io(-client)?|@prisma/.*|pg|better-sqlite3|@tanstack/.*|recharts)$", message: "the engine (server/qrag) uses no platform package" };

export default tseslint.config(
  { ignores: ["node_modules/", ".next/", "generated/", "runs/**", "data/**", "bin/", "scratch/", "next-env.d.ts", "test-results/", "bench-results/", ".device/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.tsx", "lib/**/*.ts"],
    plugins: { "react-hooks": reactHooks },
    rules: { ...reactHooks.configs.recommended.rules },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["server/qrag/**/*.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": restrict(
        { regex: "(^|/)(api|runs|realtime|worker|db)/|(^|\\.\\./)main\\.ts$", message: "the engine imports nothing of the platform (server/api, runs, realtime, worker, db)" },
        { regex: "(^|/)lib/(?!contracts/)|(^|/)(app|components|generated)/", message: "the engine may use lib/contracts only" },
        platformPackages,
      ),
    },
  },
  {
    files: ["app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}", "lib/**/*.{ts,tsx}"],
    rules: {
      "@typescript-eslint/no-restricted-imports": restrict(
        { regex: "(^|/)server/", message: "browser code imports contracts (lib/contracts), never server/" },
        { regex: "^(socket\\.io|@prisma/.*|pg|better-sqlite3|@tensorflow/.*)$", message: "a server-side package in browser code" },
        { regex: "(^|/)generated/", allowTypeImports: true, message: "Prisma's generated client: type imports only (lib/contracts/dto.ts)" },
      ),
    },
  },
  {
    files: ["server/{api,realtime,worker,db,bench}/**/*.ts", "server/main.ts", "server/env.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": restrict(engineFace),
    },
  },
  {
    files: ["server/runs/**/*.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": restrict(engineFace, { regex: "(^|/)(realtime|api)/", message: "server/runs knows no sockets or HTTP: changes go out through the RunNotifier passed in" }),
    },
  },
);
