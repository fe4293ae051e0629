/**
 * The command lines that hints print (`apply it with: ...`, `next: ...`, `plan again with: ...`). A hint must run as
 * printed in the same folder and shell, so it carries the flags that said where its command ran: the project file,
 * the environment, the API, the key's file, `--local`. The shell's variables (EDGEPLAN_API_KEY, EDGEPLAN_ENV, ...)
 * are still there for the hint, so they are not repeated; the API key itself is never printed.
 */
import { existsSync } from "node:fs";
import { extname, resolve } from "node:path";
import { CLIENT_DEFAULTS, type CommonCliOptions } from "../api/options.js";
import type { Plan } from "../model/plan.js";

/** What the flags of a hint are taken from: the options as the command line gave them, before the project file. */
export type GivenWhere = Pick<CommonCliOptions, "config" | "env" | "apiUrl" | "apiKeyFile" | "local" | "fixtures" | "insecureHttp" | "versionHeader">;

/** A word as a POSIX shell reads it back: as it is when it is plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The shell's variables, as the command saw them: a flag that only repeats one of them is left out. */
export type ShellEnv = Record<string, string | undefined>;

/**
 * The flags that say where a command ran, in a fixed order. `--env` is left out when `given.env` is undefined (a
 * saved plan carries its environment, and `apply --plan` takes it from there); `--api-url` when it is the shell's
 * EDGEPLAN_API_URL (the command line reads that variable as the flag).
 */
export function whereArgs(given: GivenWhere, shell: ShellEnv): string[] {
  const args: string[] = [];
  if (typeof given.config === "string") args.push("--config", given.config);
  if (given.env !== undefined) args.push("--env", given.env);
  if (given.local === true) {
    args.push("--local");
    if (given.fixtures !== undefined) args.push("--fixtures", given.fixtures);
  } else if (given.apiUrl !== undefined && given.apiUrl !== shell.EDGEPLAN_API_URL) args.push("--api-url", given.apiUrl);
  if (given.apiKeyFile !== undefined) args.push("--api-key-file", given.apiKeyFile);
  if (given.insecureHttp === true) args.push("--insecure-http");
  if (given.versionHeader !== undefined && given.versionHeader !== CLIENT_DEFAULTS.versionHeader) args.push("--version-header", given.versionHeader);
  return args;
}

/** `edgeplan WORDS...` as a shell reads it back. */
export function commandLine(words: readonly string[]): string {
  return ["edgeplan", ...words].map(shellWord).join(" ");
}

/**
 * A file name next to `file` that does not exist yet in `cwd`: `plan-TAG.json`, then `plan-TAG-2.json`, ... A hint
 * that makes a new plan names it, so that the plan a person reviewed is not overwritten by one they did not.
 */
export function freshPlanFile(cwd: string, file: string, tag: string): string {
  const ext = extname(file);
  const stem = ext === "" ? file : file.slice(0, -ext.length);
  for (let n = 1; n < 100; n++) {
    const name = `${stem}-${tag}${n === 1 ? "" : `-${n}`}${ext}`;
    if (!existsSync(resolve(cwd, name))) return name;
  }
  return `${stem}-${tag}-${Date.now()}${ext}`;
}

/**
 * `whereArgs` as text to append to a command that does not plan (`unlock`, `rollout`, `state`), with `env` the
 * environment chosen (the flag, EDGEPLAN_ENV or the saved plan's): a leading space each, or nothing. Such a command
 * must reach the same API; it takes no `--fixtures` (it reads the local server's file as it is).
 */
export function whereText(given: GivenWhere, env: string | null | undefined, shell: ShellEnv): string {
  const args = whereArgs({ ...given, env: env ?? undefined, fixtures: undefined }, shell);
  return args.map((a) => ` ${shellWord(a)}`).join("");
}

/**
 * `whereText` and `--stack STACK` when `stack` is given (the stack typed, or a saved plan's that the command would not
 * choose by itself): what takes a `rollout` or `state` command that a note or a report names (`rollout promote NAME`)
 * to the same API and stack.
 */
export function stackWhere(given: GivenWhere, env: string | null | undefined, shell: ShellEnv, stack?: string): string {
  return whereText(given, env, shell) + (stack === undefined ? "" : ` --stack ${shellWord(stack)}`);
}

/**
 * `stackWhere` for a saved plan that `show` prints: its environment's `--env`, `--local` for the embedded server's
 * plan, else `--api-url` (unless it is the shell's EDGEPLAN_API_URL), and its `--stack`. The file is untrusted: each
 * word is quoted as the shell reads it back.
 */
export function savedPlanWhere(plan: Pick<Plan, "api" | "environment" | "stack">, shell: ShellEnv): string {
  const url = plan.api?.url;
  const given: GivenWhere = url === undefined ? {} : url.startsWith("local:") ? { local: true } : { apiUrl: url };
  return stackWhere(given, plan.environment?.name, shell, plan.stack === shell.EDGEPLAN_STACK ? undefined : plan.stack);
}

/** `--stack` as typed (not the shell's EDGEPLAN_STACK, which the command line reads as the flag), or undefined. */
export function typedStack(given: { stack?: string }, shell: ShellEnv): string | undefined {
  return given.stack !== undefined && given.stack !== shell.EDGEPLAN_STACK ? given.stack : undefined;
}
