/**
 * The action's inputs, read with the Actions toolkit (`core.getInput`) from the `INPUT_<NAME>` variables the runner
 * sets (upper case, spaces as `_`, hyphens kept: `INPUT_API-KEY`), and checked: a wrong value names the input.
 */
import { getInput } from "@actions/core";
import { EdgeplanError } from "../model/errors.js";
import { ACTIONS_BOT } from "./github.js";

/** Every input of action.yml, by its name there. */
export const INPUT_NAMES = [
  "command",
  "paths",
  "stack",
  "environment",
  "api-url",
  "api-key",
  "prune",
  "ack",
  "on-difference",
  "wait",
  "wait-timeout",
  "lock-timeout",
  "rollouts-only",
  "comment",
  "comment-author",
  "drift-issue",
  "github-token",
] as const;
export type InputName = (typeof INPUT_NAMES)[number];

/** Every output of action.yml. */
export const OUTPUT_NAMES = ["has-changes", "exitcode", "plan-file", "summary"] as const;
export type OutputName = (typeof OUTPUT_NAMES)[number];

/** The risk rules an apply may acknowledge (docs/cli.md, "Plan and apply"). */
export const ACK_RULES = ["auth-removal", "traffic-shift", "no-traffic", "mass-delete"] as const;

export interface ActionInputs {
  /** Left out: chosen from the event (see `resolveCommand`). */
  command?: "plan" | "apply";
  paths: string[];
  /** Left out: EDGEPLAN_STACK, else `default`. */
  stack?: string;
  apiUrl?: string;
  apiKey?: string;
  prune: boolean;
  ack: string[];
  /** On a merge whose plan is not the reviewed one: `refuse` (write nothing, fail) or `apply`. */
  onDifference: "refuse" | "apply";
  /** On an apply: go on step after step until every rollout reached the manifest's weights. */
  wait: boolean;
  /** With wait: how long it may go on (a duration, as `--wait-timeout` takes it). */
  waitTimeout?: string;
  /** On an apply: how long to wait for another apply's lease on the stack (as `--lock-timeout`). */
  lockTimeout?: string;
  /** On an apply: write rollout steps only; a plan with any other change writes nothing and fails. */
  rolloutsOnly: boolean;
  comment: boolean;
  /** The login the token writes comments as: only its sticky comment is trusted and edited. */
  commentAuthor: string;
  /** On a plan outside a pull request: open, update or close the stack's drift issue. */
  driftIssue: boolean;
  githubToken?: string;
}

/** What stands in for an input left empty: the project file's settings (`edgeplan.yaml`). */
export interface InputDefaults {
  paths?: string[];
  prune?: boolean;
  stack?: string;
  /** The environment chosen: the environment input, else EDGEPLAN_ENV, else the only one the file defines. */
  environment?: string;
  /** The variable that holds the API key when the api-key input is empty: the file's `api_key_env`. */
  apiKeyEnv?: string;
}

/** A wrong input value: the message names the input and the values it takes. */
export class InputError extends EdgeplanError {
  override name = "InputError";
}

/** The environment variable GitHub sets for input `name`. */
export function inputEnvName(name: string): string {
  return `INPUT_${name.replace(/ /g, "_").toUpperCase()}`;
}

/** The trimmed value of an input; undefined when unset or blank. */
export function readInput(name: InputName): string | undefined {
  return getInput(name) || undefined;
}

/**
 * A boolean input, with the spellings of the toolkit's `getBooleanInput` (YAML 1.2 core schema), but a message that
 * names the input and its value.
 */
export function readBooleanInput(name: InputName, fallback: boolean): boolean {
  const value = readInput(name);
  if (value === undefined) return fallback;
  if (["true", "True", "TRUE"].includes(value)) return true;
  if (["false", "False", "FALSE"].includes(value)) return false;
  throw new InputError(`input ${name}: "${value}" is not a boolean; use true or false`);
}

/** A list input: items separated by commas or newlines, blanks dropped, duplicates kept once. */
export function splitList(value: string | undefined): string[] {
  if (value === undefined) return [];
  const items = value
    .split(/[,\r\n]/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return [...new Set(items)];
}

/**
 * Reads and checks every input. Secrets are never part of an error message.
 * @throws InputError naming the input that is wrong and what it accepts.
 */
export function readActionInputs(defaults: InputDefaults = {}): ActionInputs {
  const command = readInput("command");
  if (command !== undefined && command !== "plan" && command !== "apply") {
    throw new InputError(`input command: "${command}" is not a command of the action; use plan or apply (or leave it out)`);
  }
  const ack = splitList(readInput("ack"));
  const unknown = ack.filter((rule) => !(ACK_RULES as readonly string[]).includes(rule));
  if (unknown.length > 0) {
    throw new InputError(`input ack: unknown rule ${unknown.map((r) => `"${r}"`).join(", ")}; the rules are ${ACK_RULES.join(", ")}`);
  }
  const onDifference = readInput("on-difference") ?? "refuse";
  if (onDifference !== "refuse" && onDifference !== "apply") {
    throw new InputError(`input on-difference: "${onDifference}" is not a choice; use refuse (the default) or apply`);
  }
  const paths = splitList(readInput("paths"));
  const inputs: ActionInputs = {
    paths: paths.length > 0 ? paths : (defaults.paths ?? ["."]),
    prune: readBooleanInput("prune", defaults.prune ?? false),
    ack,
    onDifference,
    wait: readBooleanInput("wait", false),
    rolloutsOnly: readBooleanInput("rollouts-only", false),
    comment: readBooleanInput("comment", true),
    commentAuthor: readInput("comment-author") ?? ACTIONS_BOT,
    driftIssue: readBooleanInput("drift-issue", false),
  };
  if (command !== undefined) inputs.command = command;
  const stack = readInput("stack");
  if (stack !== undefined) inputs.stack = stack;
  const waitTimeout = readInput("wait-timeout");
  if (waitTimeout !== undefined) inputs.waitTimeout = waitTimeout;
  const lockTimeout = readInput("lock-timeout");
  if (lockTimeout !== undefined) inputs.lockTimeout = lockTimeout;
  const apiUrl = readInput("api-url");
  if (apiUrl !== undefined) inputs.apiUrl = apiUrl;
  const apiKey = readInput("api-key");
  if (apiKey !== undefined) inputs.apiKey = apiKey;
  const githubToken = readInput("github-token");
  if (githubToken !== undefined) inputs.githubToken = githubToken;
  return inputs;
}
