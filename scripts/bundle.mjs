#!/usr/bin/env node
/**
 * esbuild bundles of the sources, made twice over:
 * - The GitHub Action in one file, `bundle/index.mjs` (action.yml `runs.main`): `npm run bundle`, or
 *   `node scripts/bundle.mjs [OUTFILE]`. The same sources give the same bytes: fixed options, no timestamps, no
 *   source map, paths relative to the repository. `serve` and `--local` (the embedded server, better-sqlite3) are
 *   not in it: their one dynamic import becomes a module that says so.
 * - The CLI the package's `bin` runs, `dist/cli/edgeplan.js` (`npm run build` makes it, after the compiler): one
 *   entry and one chunk per lazily imported command. A process then
 *   reads a few dozen files instead of several hundred (`plan` loads 323 ES modules, 190 of them zod's, besides
 *   undici's CommonJS files), which was most of a command's start. The server's native and order-sensitive
 *   packages stay packages of their own (below).
 */
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const BUNDLE = "bundle/index.mjs";

/** What `--local` and `serve` would load; in the bundle, importing it fails with this sentence. */
const LOCAL_ONLY = /(^|\/)server\/index\.js$|^better-sqlite3$/;
const LOCAL_ONLY_MESSAGE = "--local and serve are not part of the GitHub Action; run them with the edgeplan CLI (npm install edgeplan)";

/**
 * The `yaml` package's platform-neutral build (its `browser/dist/`), the same code as its Node build less two debug
 * hooks: the Node build reads `process.env.LOG_TOKENS` for every token the parser takes and `process.env.LOG_STREAM`
 * for every one the composer takes, and each read of `process.env` is a call into Node's C++. On the plan-read
 * fleet (1.5 MB of manifests) that was a quarter of the parse (docs/performance.md). A path relative to the
 * repository, so that the bundles do not depend on where it is checked out.
 */
const YAML_NEUTRAL = `./${relative(ROOT, join(dirname(createRequire(import.meta.url).resolve("yaml/package.json")), "browser/dist/index.js"))}`;

/** What both bundles are: ES modules for node 20 that keep their names and comments, nothing that varies. */
const SHARED = {
  alias: { yaml: YAML_NEUTRAL },
  absWorkingDir: ROOT,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  charset: "utf8",
  legalComments: "eof",
  sourcemap: false,
  minify: false,
  logLevel: "warning",
};

/** Bundled CommonJS modules call require() for Node's own modules: give them one in an ES module. */
const REQUIRE_BANNER = ['import { createRequire as __edgeplanCreateRequire } from "node:module";', "const require = __edgeplanCreateRequire(import.meta.url);"].join("\n");

const localOnly = {
  name: "edgeplan-local-only",
  setup(b) {
    b.onResolve({ filter: LOCAL_ONLY }, (args) => ({ path: args.path, namespace: "edgeplan-local-only" }));
    b.onLoad({ filter: /.*/, namespace: "edgeplan-local-only" }, () => ({
      contents: `throw new Error(${JSON.stringify(LOCAL_ONLY_MESSAGE)});`,
      loader: "js",
    }));
  },
};

/** Writes the bundle to `outfile` (relative to the repository root, or absolute). */
export async function bundleAction(outfile = BUNDLE) {
  await build({
    ...SHARED,
    entryPoints: ["src/action/main.ts"],
    outfile,
    plugins: [localOnly],
    banner: {
      js: ["// The edgeplan GitHub Action, bundled from src/action/main.ts by `npm run bundle`. Do not edit: rebuild.", REQUIRE_BANNER].join("\n"),
    },
  });
}

/** Where the CLI's bundle goes: `edgeplan.js` (the `bin`) and the chunks of the commands it imports lazily. */
export const CLI_DIR = "dist/cli";

/**
 * Left as packages: better-sqlite3 (native) and pg (its optional native part), and the SAML certificate's
 * @peculiar/x509 with reflect-metadata, which must load first (src/server/saml-certificate.ts imports them in that
 * order; bundled into chunks, the order is not kept and the first SAML PUT fails). These, and only these, are the
 * package's `dependencies`: everything else is in the bundle.
 */
export const CLI_EXTERNAL = ["better-sqlite3", "pg", "@peculiar/x509", "reflect-metadata"];

/** Writes the CLI's bundle to `outdir` (relative to the repository root, or absolute). */
export async function bundleCli(outdir = CLI_DIR) {
  // Chunks are named by their content: the ones of an earlier build would stay behind.
  rmSync(isAbsolute(outdir) ? outdir : join(ROOT, outdir), { recursive: true, force: true });
  await build({
    ...SHARED,
    entryPoints: { edgeplan: "src/cli.ts" },
    outdir,
    splitting: true,
    external: CLI_EXTERNAL,
    banner: { js: REQUIRE_BANNER },
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv[2] === "--cli") await bundleCli(process.argv[3]);
  else await bundleAction(process.argv[2]);
}
