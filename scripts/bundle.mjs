#!/usr/bin/env node
/**
 * Bundles the GitHub Action into one file, `bundle/index.mjs` (action.yml `runs.main`), with esbuild:
 * `npm run bundle`, or `node scripts/bundle.mjs [OUTFILE]`. The same sources give the same bytes: fixed options,
 * no timestamps, no source map, paths relative to the repository. `serve` and `--local` (the embedded server,
 * better-sqlite3) are not in it: their one dynamic import becomes a module that says so.
 */
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const BUNDLE = "bundle/index.mjs";

/** What `--local` and `serve` would load; in the bundle, importing it fails with this sentence. */
const LOCAL_ONLY = /(^|\/)server\/index\.js$|^better-sqlite3$/;
const LOCAL_ONLY_MESSAGE = "--local and serve are not part of the GitHub Action; run them with the edgeplan CLI (npm install edgeplan)";

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
    absWorkingDir: ROOT,
    entryPoints: ["src/action/main.ts"],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    charset: "utf8",
    legalComments: "eof",
    sourcemap: false,
    minify: false,
    logLevel: "warning",
    plugins: [localOnly],
    banner: {
      js: [
        "// The edgeplan GitHub Action, bundled from src/action/main.ts by `npm run bundle`. Do not edit: rebuild.",
        // Bundled CommonJS modules call require() for Node's own modules: give them one in this ES module.
        'import { createRequire as __edgeplanCreateRequire } from "node:module";',
        "const require = __edgeplanCreateRequire(import.meta.url);",
      ].join("\n"),
    },
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await bundleAction(process.argv[2]);
}
