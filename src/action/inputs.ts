/**
 * The action's inputs, read from the `INPUT_<NAME>` environment variables the way GitHub names them (upper case,
 * spaces as `_`, hyphens kept: `INPUT_API-KEY`). action.yml maps every input to its variable explicitly, so the
 * command runs the same inside and outside GitHub.
 */
import { EdgeplanError } from "../model/errors.js";

/** Every input of action.yml, by its name there. */
export const INPUT_NAMES = ["command", "paths", "stack", "api-url", "api-key", "prune", "ack", "comment", "github-token"] as const;
export type InputName = (typeof INPUT_NAMES)[number];

/** Every output of action.yml. */
export const OUTPUT_NAMES = ["has-changes", "exitcode", "plan-file", "summary"] as const;
export type OutputName = (typeof OUTPUT_NAMES)[number];

/** The risk rules an apply may acknowledge (README, "Plan and apply"). */
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
  comment: boolean;
  githubToken?: string;
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
export function readInput(env: Record<string, string | undefined>, name: InputName): string | undefined {
  const value = env[inputEnvName(name)]?.trim();
  return value ? value : undefined;
}

/** A boolean input as GitHub's toolkit reads one: the YAML 1.2 core schema spellings only. */
export function readBooleanInput(env: Record<string, string | undefined>, name: InputName, fallback: boolean): boolean {
  const value = readInput(env, name);
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
export function readActionInputs(env: Record<string, string | undefined>): ActionInputs {
  const command = readInput(env, "command");
  if (command !== undefined && command !== "plan" && command !== "apply") {
    throw new InputError(`input command: "${command}" is not a command of the action; use plan or apply (or leave it out)`);
  }
  const ack = splitList(readInput(env, "ack"));
  const unknown = ack.filter((rule) => !(ACK_RULES as readonly string[]).includes(rule));
  if (unknown.length > 0) {
    throw new InputError(`input ack: unknown rule ${unknown.map((r) => `"${r}"`).join(", ")}; the rules are ${ACK_RULES.join(", ")}`);
  }
  const paths = splitList(readInput(env, "paths"));
  const inputs: ActionInputs = {
    paths: paths.length > 0 ? paths : ["."],
    prune: readBooleanInput(env, "prune", false),
    ack,
    comment: readBooleanInput(env, "comment", true),
  };
  if (command !== undefined) inputs.command = command;
  const stack = readInput(env, "stack");
  if (stack !== undefined) inputs.stack = stack;
  const apiUrl = readInput(env, "api-url");
  if (apiUrl !== undefined) inputs.apiUrl = apiUrl;
  const apiKey = readInput(env, "api-key");
  if (apiKey !== undefined) inputs.apiKey = apiKey;
  const githubToken = readInput(env, "github-token");
  if (githubToken !== undefined) inputs.githubToken = githubToken;
  return inputs;
}
