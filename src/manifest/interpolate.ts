/**
 * Variables in manifests: `${var.NAME}` from the chosen environment's `vars` (the project file's `environments:`),
 * in every string and every mapping key, and `${EDGEPLAN_VAR_*}` from the process environment. Only variables named
 * `EDGEPLAN_VAR_*` are read from the process, so that a manifest changed in a pull request cannot copy the runner's
 * other secrets (tokens, keys) into a plan. Those values are secrets too (CI keeps secrets in the environment): they
 * are allowed only in the fields that are sent and never shown (`SEND_ONLY`), where the reference is kept as written
 * and replaced only when the request is built (`fillSecrets`); anywhere else, a value that would be written to the
 * API or printed, such a reference is an error. `$${` writes a literal `${`. Pure: the environment and the variables
 * are passed in.
 */
import { isPair, isScalar, isSeq, visit } from "yaml";
import type { Diagnostic } from "../model/errors.js";
import type { ChosenEnvironment } from "../model/project-schema.js";
import { VAR_PREFIX } from "../model/redact.js";
import { startOf, type ParsedDocument } from "./yaml-source.js";

export { VAR_PREFIX };
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ENVIRONMENT_VAR = /^var\.([A-Za-z_][A-Za-z0-9_]*)$/;

export type Env = Record<string, string | undefined>;

/**
 * Where `${var.NAME}` values come from: the chosen environment, null when there is none, or "unknown" when the
 * project file could not be read (its own errors are reported; a reference is then left as written, unjudged).
 */
export type VarSource = ChosenEnvironment | null | "unknown";

/**
 * The most text variables may add to one document: as much as a manifest file may hold. Without it, a value of a
 * megabyte named a hundred thousand times in a file of a megabyte would take a hundred gigabytes.
 */
export const MAX_ADDED_CHARS = 1024 * 1024;

/** `$${` (a literal `${`), `${NAME}`, or a `${` that no `}` closes. */
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{[^}]*$/g;

/** The value of `${var.NAME}`, or why there is none. */
function environmentVariable(name: string, vars: VarSource): { value: string } | { problem?: string } {
  if (vars === "unknown") return {};
  if (vars === null) {
    return { problem: `\${var.${name}}: no environment is chosen, so there are no vars; define environments: with vars in edgeplan.yaml and pass --env NAME` };
  }
  if (Object.hasOwn(vars.vars, name)) return { value: vars.vars[name] as string };
  const has = Object.keys(vars.vars);
  const missing = `\${var.${name}}: environment ${vars.name} has no variable ${name} (its vars: ${has.length > 0 ? has.join(", ") : "none"})`;
  return { problem: `${missing}; add it under environments.${vars.name}.vars in edgeplan.yaml` };
}

/** The value of `${name}`, or why it cannot be replaced (no problem: left as written, unjudged). */
function resolve(name: string, env: Env, vars: VarSource): { value: string } | { problem?: string } {
  const variable = ENVIRONMENT_VAR.exec(name);
  if (variable) return environmentVariable(variable[1] as string, vars);
  if (!VAR_NAME.test(name)) {
    return { problem: `\${${name}} is not a variable reference: a name has letters, digits and _; write $\${${name}} for the literal text` };
  }
  if (!name.startsWith(VAR_PREFIX)) {
    const only = `\${${name}}: only ${VAR_PREFIX}* variables can be used, so that a manifest cannot read the runner's secrets`;
    return { problem: `${only}; set ${VAR_PREFIX}${name} and write \${${VAR_PREFIX}${name}}, or write $\${${name}} for the literal text` };
  }
  const value = env[name];
  return value === undefined ? { problem: `\${${name}}: ${name} is not set; set it in edgeplan's environment, or write $\${${name}} for the literal text` } : { value };
}

/** What replacing the variables of one text gave. */
interface Substituted {
  text: string;
  problems: string[];
  /** With `keep`: the variables that are not set here (a plan does not need them; apply does). */
  unset?: string[];
  unresolved?: true;
}

/**
 * What becomes of a `${EDGEPLAN_VAR_*}` reference: replaced by its value (`fill`, when a request is built), kept as
 * written (`keep`, in a field that is sent and never shown; one that is not set is listed in `unset`), or an error
 * (`refuse`, anywhere a value is written to the API or printed).
 */
export type SecretMode = "fill" | "keep" | "refuse";

/** Why `${name}` may not stand where it does; `field` is the data path of the value. */
function refusal(name: string, field: string): string {
  return (
    `\${${name}}: ${field} is written to the API or shown, and ${VAR_PREFIX}* values are secrets, sent only in ${SEND_ONLY_TEXT}; ` +
    `for a value that is not secret, use \${var.NAME} from the environment's vars (environments.NAME.vars in edgeplan.yaml)`
  );
}

/**
 * The text with every `${var.NAME}` replaced, and every `${EDGEPLAN_VAR_*}` as `secrets` says (`refuse` names
 * `field` in its message), or the problems found (each a complete message); `unresolved` is true when a reference
 * could not be replaced (with a problem, or unjudged). The values put in use up `budget.left` characters (the texts
 * of one document share one budget); once it is spent (-1), no value is put in. With `keep`, the text stays one that
 * `fill` reads again: `$${` is kept, and a `${` inside a value of `vars` is written `$${`.
 */
export function substitute(
  text: string,
  env: Env,
  vars: VarSource = null,
  budget = { left: MAX_ADDED_CHARS },
  secrets: SecretMode = "fill",
  field = "this value",
): Substituted {
  const problems: string[] = [];
  const unset: string[] = [];
  let unresolved = false;
  const out = text.replace(REFERENCE, (match, name: string | undefined) => {
    if (match === "$${") return secrets === "keep" ? match : "${";
    if (name === undefined) {
      problems.push("${ is not closed by }; close the variable reference, or write $${ for a literal ${");
      return match;
    }
    const secret = VAR_NAME.test(name) && name.startsWith(VAR_PREFIX);
    const found = secret && secrets === "refuse" ? { problem: refusal(name, field) } : resolve(name, env, vars);
    if (secret && secrets === "keep") {
      if (!("value" in found)) unset.push(name);
      return match;
    }
    const value = "value" in found && secrets === "keep" ? found.value.replaceAll("${", () => "$${") : "value" in found ? found.value : "";
    if ("value" in found && value.length <= budget.left) {
      budget.left -= value.length;
      return value;
    }
    if ("value" in found && budget.left >= 0) {
      budget.left = -1;
      problems.push(
        `variables would add more than ${MAX_ADDED_CHARS} characters to this document, more than a manifest file may hold; check the values of the variables it names`,
      );
    } else if ("problem" in found && found.problem !== undefined) problems.push(found.problem);
    unresolved = true;
    return "";
  });
  const result: Substituted = unresolved || problems.length > 0 ? { text: out, problems, unresolved: true } : { text: out, problems };
  if (unset.length > 0) result.unset = unset;
  return result;
}

/**
 * A text of a send-only field (a check's URL, a header value) with its `${EDGEPLAN_VAR_*}` values put in, for the
 * request only: the result is never shown or stored. A variable unset since the plan was made is a problem.
 */
export function fillSecrets(text: string, env: Env): { text: string } | { problem: string } {
  const filled = substitute(text, env, "unknown", { left: MAX_ADDED_CHARS });
  return filled.problems.length > 0 ? { problem: filled.problems.join("; ") } : { text: filled.text };
}

/** Where `${EDGEPLAN_VAR_*}` may stand: the fields that are sent and never shown, by the end of their data path. */
const SEND_ONLY: ReadonlyArray<{ path: ReadonlyArray<string | null>; url: boolean }> = [
  { path: ["rollout", "check", "url"], url: true },
  { path: ["rollout", "analysis", null, "web", "url"], url: true },
  { path: ["rollout", "analysis", null, "web", "headers", null], url: false },
];
const SEND_ONLY_TEXT = "rollout.check.url, rollout.analysis[].web.url and web.headers values";

/** The send-only field a value's data path ends in (null wildcards any key or index), or undefined. */
function sendOnlyField(path: readonly PropertyKey[]): { url: boolean } | undefined {
  return SEND_ONLY.find((f) => f.path.length <= path.length && f.path.every((k, i) => k === null || path[path.length - f.path.length + i] === k));
}

/**
 * A send-only variable that is not set is no error: a plan sends no check and needs no secret (a pull request's
 * plan runs best without it), but apply will send it.
 */
function unsetWarning(name: string, field: string): string {
  return `\${${name}}: ${name} is not set; a plan does not need it, but apply sends it in ${field}: set it where apply runs`;
}

/** A URL's scheme, host and port written out, then the start of its path, query or fragment: where the request goes. */
const URL_ADDRESS = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]+[/?#]/i;

/**
 * A variable before the path of a send-only URL (or in a URL whose address is not written out as `scheme://host/`,
 * which a URL parser may read otherwise): the plan would not show where the secret goes.
 */
function addressProblem(text: string, field: string): string | undefined {
  const at = text.indexOf("${");
  if (at < 0 || URL_ADDRESS.test(text.slice(0, at))) return undefined;
  return `${field}: a variable may stand in the path or the query of the URL, not in its scheme, host or port, so that the plan shows where the request (and its secrets) goes; write the address out`;
}

/** A data path as text (`rollout.analysis[0].web.url`). */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((k, i) => (typeof k === "number" ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join("") || "this value";
}

/** The data path (keys and indexes) of a node, from the ancestors `visit` passes. */
function dataPath(ancestors: readonly unknown[], node: unknown): PropertyKey[] {
  return ancestors.flatMap((a, i): PropertyKey[] => {
    if (isSeq(a)) return [a.items.indexOf((ancestors[i + 1] ?? node) as never)];
    if (!isPair(a)) return [];
    const key = a.key as { value?: unknown } | null;
    return [String(key !== null && typeof key === "object" && "value" in key ? key.value : key)];
  });
}

/** A key that a substitution made equal to another key of its mapping: the YAML reader could not see it. */
function repeatedKeys(d: ParsedDocument): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  visit(d.doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        if (seen.has(pair.key.value)) {
          const message = `key ${JSON.stringify(pair.key.value)} (after variables are replaced) repeats an earlier key of this mapping; give each a different value`;
          diagnostics.push({ severity: "error", pos: d.at(startOf(pair.key) ?? 0), message });
        }
        seen.add(pair.key.value);
      }
    },
  });
  return diagnostics;
}

/**
 * Replaces variables in every string value and every mapping key of a document, in place: `${EDGEPLAN_VAR_*}` is
 * kept as written in a send-only field (and must not stand in a URL's address there), and refused anywhere else.
 * Returns one error per problem, at the value or key that holds it, and the data paths of the values (and keys) left as written because
 * of one, so that the schema does not judge them again.
 */
export function interpolateDocument(d: ParsedDocument, env: Env, vars: VarSource = null): { diagnostics: Diagnostic[]; unresolved: PropertyKey[][] } {
  const diagnostics: Diagnostic[] = [];
  const unresolved: PropertyKey[][] = [];
  if (!d.mayInterpolate) return { diagnostics, unresolved };
  let keyReplaced = false;
  const budget = { left: MAX_ADDED_CHARS };
  visit(d.doc, {
    Scalar(key, node, ancestors) {
      if (typeof node.value !== "string" || !node.value.includes("$")) return;
      const path = dataPath(ancestors, node);
      const sendOnly = key === "key" ? undefined : sendOnlyField(path);
      const field = pathText(path);
      const result = substitute(node.value, env, vars, budget, sendOnly ? "keep" : "refuse", key === "key" ? `the key ${field}` : field);
      const address = sendOnly?.url ? addressProblem(result.text, field) : undefined;
      if (address !== undefined) result.problems.push(address);
      const pos = d.at(startOf(node) ?? 0);
      for (const message of result.problems) diagnostics.push({ severity: "error", pos, message });
      for (const name of result.unset ?? []) diagnostics.push({ severity: "warning", pos, message: unsetWarning(name, field) });
      if (result.unresolved || address !== undefined) unresolved.push(path);
      else {
        keyReplaced ||= key === "key" && node.value !== result.text;
        node.value = result.text;
      }
    },
  });
  if (keyReplaced) diagnostics.push(...repeatedKeys(d));
  return { diagnostics, unresolved };
}
