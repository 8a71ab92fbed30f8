import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";

// Layer rules (DESIGN.md, "may import"): the engine imports nothing of the platform; browser code
// imports nothing of server/, and lib/ nothing of components/ or app/; the platform enters the
// engine through its public face only. A pattern sees the import's text, not the file it names.
// `layer(...patterns)`: the rules of one layer, for import declarations and for import() alike.
const layer = (...patterns) => ({
  "@typescript-eslint/no-restricted-imports": ["error", { patterns }],
  "no-restricted-syntax": ["error", ...patterns.map((p) => ({ selector: `ImportExpression > Literal[value=/${p.regex.replaceAll("/", "\\/")}/]`, message: p.message }))],
});
const engineFace = { regex: "(^|/)qrag/(?!(index|runtime)\\.ts$)", message: "the platform enters the engine through server/qrag/index.ts (or runtime.ts for training)" };
const platformPackages = { regex: "^(next(/.*)?|react(-dom)?(/.*)?|socket\\.io(-client)?|@prisma/.*|pg|better-sqlite3|@tanstack/.*|recharts)$", message: "the engine (server/qrag) uses no platform package" };
const engineLib = { regex: "(^|/)lib/(?!contracts/)|(^|/)(app|components|generated)/", message: "the engine may use lib/contracts only" };
// The engine has folders named like the platform's (cli/, bench/, env/), so its rule counts levels:
// from a file `depth` folders below server/qrag, an import climbing depth + 1 levels reaches server/,
// and may go on only into qrag/ (climbing further is engineLib's). One block per depth.
const ENGINE_DEPTHS = [0, 1, 2, 3, 4, 5, 6, 7];
const enginePlatform = (depth) => ({
  regex: `^(\\.\\./){${depth + 1}}(?!qrag/|\\.\\./)`,
  message: "the engine imports nothing of the platform (server/api, auth, bench, cli, db, http, local, realtime, runs, worker, settings.ts, main.ts): it takes its settings from server/qrag/settings.ts",
});
const browser = [
  { regex: "(^|/)server/", message: "browser code imports contracts (lib/contracts), never server/" },
  { regex: "^(socket\\.io|@prisma/.*|pg|better-sqlite3|@tensorflow/.*)$", message: "a server-side package in browser code" },
  { regex: "(^|/)generated/", allowTypeImports: true, message: "Prisma's generated client: type imports only (lib/contracts/dto.ts)" },
];
/** Every platform file: the dashboard, the worker, the CLIs, the benches, the scripts. */
const PLATFORM = ["server/{api,auth,bench,cli,db,executors,http,local,playground,realtime,runs,worker}/**/*.ts", "server/main.ts", "server/settings.ts", "scripts/**/*.ts"];

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
  ...ENGINE_DEPTHS.map((depth) => ({
    files: [`server/qrag/${"*/".repeat(depth)}*.ts`],
    rules: layer(enginePlatform(depth), engineLib, platformPackages),
  })),
  {
    files: ["app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}"],
    rules: layer(...browser),
  },
  {
    files: ["lib/**/*.{ts,tsx}"],
    rules: layer(...browser, { regex: "^(\\.{1,2}/)+(components|app)/", message: "lib/ holds what pages and components share: it imports neither components/ nor app/" }),
  },
  {
    files: PLATFORM,
    rules: layer(engineFace),
  },
  {
    files: ["server/runs/**/*.ts"],
    rules: layer(engineFace, { regex: "(^|/)(realtime|api)/", message: "server/runs knows no sockets or HTTP: changes go out through the RunNotifier passed in" }),
  },
  {
    files: ["server/settings.ts"],
    rules: layer(engineFace, { regex: "^\\.", message: "server/settings.ts imports no module of the project (every process reads it first)" }),
  },
  {
    // The one exception: the device bundle's entry is the engine's own bench CLI (`npm run bench`,
    // server/qrag/bench/main.ts), bundled by scripts/device/pack.ts for the GPU machine. It runs the
    // engine alone, as the qrag CLI does; nothing else of the engine's inside is open to scripts/.
    files: ["scripts/device/bench-entry.ts"],
    rules: layer({ ...engineFace, regex: "(^|/)qrag/(?!(index|runtime|bench/main)\\.ts$)" }),
  },
);
