/**
 * `edgeplan init [--stack NAME] [--api-url URL] [--dir DIR] [--yes] [--force]`: starts a project in DIR: the
 * project file `edgeplan.yaml`, `.edgeplan/` (the state of `--local`) in `.gitignore`, and a first manifest,
 * `manifests/example.yaml`. On a terminal it asks for the stack and the API URL, showing the defaults; otherwise
 * (or with `--yes`) it takes the flags and the defaults. It never overwrites a file unless `--force`: it names the
 * files that exist and exits 1. What it writes passes `edgeplan validate`.
 */
import { mkdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { checkBaseUrl } from "../api/options.js";
import { EdgeplanError, EXIT, fileErrorReason } from "../model/errors.js";
import { NameSchema } from "../model/manifest-schema.js";
import { PROJECT_FILE } from "../model/project-schema.js";
import { type CommandIO, EndOfInputError } from "./io.js";
import { writeFileAtomic } from "./output.js";
import { displayPath } from "../manifest/walk.js";

export interface InitOptions {
  stack?: string;
  apiUrl?: string;
  /** The folder to start the project in (default: the working directory). */
  dir?: string;
  /** Ask nothing. */
  yes?: boolean;
  /** Overwrite the project file and the example manifest when they exist. */
  force?: boolean;
}

/** The folder of the example manifest, which the project file's `paths` names. */
export const INIT_MANIFESTS_DIR = "manifests";
export const INIT_EXAMPLE_FILE = `${INIT_MANIFESTS_DIR}/example.yaml`;
/** The line `.gitignore` gets: the folder of `--local`'s state. */
export const GITIGNORE_LINE = ".edgeplan/";
export const DEFAULT_STACK = "default";

/** The project file's text for these answers. `apiUrl` empty: none (EDGEPLAN_API_URL or `--local` then). */
export function buildProjectFileText(stack: string, apiUrl: string): string {
  const value = (v: string): string => stringify(v).trimEnd();
  return [
    "# The project file: what `edgeplan plan`, `apply`, `export`, `validate` and `fmt` run with in this folder when no",
    "# flag (and no environment variable) says otherwise. The API key never goes here: set EDGEPLAN_API_KEY.",
    `paths: [${INIT_MANIFESTS_DIR}]`,
    `stack: ${value(stack)}`,
    apiUrl === "" ? "# api_url: https://api.example.com   # or EDGEPLAN_API_URL; without one, try it with --local" : `api_url: ${value(apiUrl)}`,
    "",
  ].join("\n");
}

/** The first manifest: a weighted backend splitting traffic between two backends. */
export const EXAMPLE_MANIFEST = `# A weighted backend: traffic split between child backends by integer weight (0 to 10000 each).
kind: WeightedBackend
name: example
description: Example, 90/10 between two backends
backends:
  # The child ids are those of backends that exist in your account: list them with the API
  # (GET /backends/tunnel_group, /backends/http_response, ...) or in the dashboard. A key may also be the name of
  # another WeightedBackend in these manifests. With --local these ids are created for you.
  bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR: 9000
  bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq: 1000
`;

/** Bad answers asked again before init gives up: enough for a typo or two, never a loop on a stuck input. */
export const INIT_ASKS = 3;

/** The answers: flags, then on a terminal (without `--yes`) a question for each, its default shown. */
async function askAnswers(options: InitOptions, io: CommandIO): Promise<{ stack: string; apiUrl: string }> {
  const stack = options.stack ?? DEFAULT_STACK;
  const apiUrl = options.apiUrl ?? "";
  if (!io.stdinIsTTY || options.yes === true) {
    checkStack(stack);
    if (apiUrl !== "") checkBaseUrl(apiUrl, true, "--api-url");
    return { stack, apiUrl };
  }
  const shown = apiUrl === "" ? "none: EDGEPLAN_API_URL, or --local to try without an account" : apiUrl;
  return {
    stack: await ask(io, `Stack name, kept in the owner markers of what edgeplan creates [${stack}]: `, stack, checkStack),
    apiUrl: await ask(io, `API URL [${shown}]: `, apiUrl, (url) => url === "" || checkBaseUrl(url, true, "--api-url")),
  };
}

/** Asks until `check` accepts the answer (an empty one is `fallback`), saying why before asking again, at most INIT_ASKS times. */
async function ask(io: CommandIO, question: string, fallback: string, check: (answer: string) => unknown): Promise<string> {
  for (let n = 1; ; n++) {
    let answer: string;
    try {
      answer = (await io.prompt(question)).trim() || fallback;
    } catch (err) {
      if (!(err instanceof EndOfInputError)) throw err;
      throw new EdgeplanError("init: the input ended before an answer; nothing was written: run init again, or pass --yes with --stack and --api-url");
    }
    try {
      check(answer);
      return answer;
    } catch (err) {
      if (!(err instanceof EdgeplanError) || n >= INIT_ASKS) throw err;
      io.stderr(`${err.message}; try again (${INIT_ASKS - n} ${INIT_ASKS - n === 1 ? "try" : "tries"} left)\n`);
    }
  }
}

function checkStack(stack: string): void {
  if (!NameSchema.safeParse(stack).success) {
    throw new EdgeplanError(
      `init: stack "${stack}" is not a valid name: lower-case letters, digits and "-", starting and ending with a letter or digit, at most 63 characters`,
    );
  }
}

const exists = (file: string): Promise<boolean> =>
  stat(file).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return false;
      throw new EdgeplanError(`init: cannot read ${file} (${fileErrorReason(err)}); check the folder's permissions`);
    },
  );

/** `.gitignore`'s new text with the line added, or null when it already ignores `.edgeplan/`. */
export function withGitignoreLine(current: string | null): string | null {
  if (current === null) return `${GITIGNORE_LINE}\n`;
  const ignored = current.split(/\r?\n/).some((line) => [".edgeplan", ".edgeplan/", "/.edgeplan", "/.edgeplan/"].includes(line.trim()));
  if (ignored) return null;
  return `${current}${current === "" || current.endsWith("\n") ? "" : "\n"}${GITIGNORE_LINE}\n`;
}

/** Runs `init`; returns 0, or throws an EdgeplanError (exit 1) naming the files that exist or the bad answer. */
export async function runInit(options: InitOptions, io: CommandIO): Promise<number> {
  const dir = path.resolve(io.cwd, options.dir ?? ".");
  const shown = (rel: string): string => displayPath(io.cwd, path.join(dir, rel));
  const targets = [PROJECT_FILE, INIT_EXAMPLE_FILE];
  if (options.force !== true) {
    const found: string[] = [];
    for (const rel of targets) if (await exists(path.join(dir, rel))) found.push(shown(rel));
    if (found.length > 0) {
      throw new EdgeplanError(
        `init: ${found.join(" and ")} already ${found.length === 1 ? "exists" : "exist"}; nothing was written. Keep ${found.length === 1 ? "it" : "them"}, or run init --force to overwrite`,
      );
    }
  }
  const { stack, apiUrl } = await askAnswers(options, io);
  await mkdir(path.join(dir, INIT_MANIFESTS_DIR), { recursive: true });
  await writeFileAtomic(path.join(dir, PROJECT_FILE), buildProjectFileText(stack, apiUrl));
  io.stdout(`wrote ${shown(PROJECT_FILE)}\n`);
  const gitignore = path.join(dir, ".gitignore");
  const current = await readFile(gitignore, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw new EdgeplanError(`init: cannot read ${shown(".gitignore")} (${fileErrorReason(err)}); add ${GITIGNORE_LINE} to it yourself`);
  });
  const next = withGitignoreLine(current);
  if (next !== null) {
    await writeFileAtomic(gitignore, next);
    io.stdout(`${current === null ? "wrote" : "added .edgeplan/ to"} ${shown(".gitignore")}\n`);
  }
  await writeFileAtomic(path.join(dir, INIT_EXAMPLE_FILE), EXAMPLE_MANIFEST);
  io.stdout(`wrote ${shown(INIT_EXAMPLE_FILE)}\n`);
  const cd = path.relative(io.cwd, dir) === "" ? "" : `cd ${displayPath(io.cwd, dir)} && `;
  io.stderr(`next: ${cd}edgeplan validate && edgeplan plan${apiUrl === "" ? " --local" : ""}\n`);
  return EXIT.ok;
}
