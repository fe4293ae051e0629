/**
 * Variables in manifests, in every string and every mapping key: `${var.NAME}` from the chosen environment's `vars`
 * (the project file's `environments:`), and `${EDGEPLAN_VAR_*}` from the process environment. Only variables named
 * `EDGEPLAN_VAR_*` are read from the process, so that a manifest changed in a pull request cannot copy the runner's
 * secrets (tokens, keys) into a plan that is then printed or commented. `$${` writes a literal `${`. Pure: the
 * environment and the variables are passed in.
 */
import { isPair, isScalar, isSeq, visit } from "yaml";
import type { Diagnostic } from "../model/errors.js";
import type { ChosenEnvironment } from "../model/project-schema.js";
import { startOf, type ParsedDocument } from "./yaml-source.js";

export const VAR_PREFIX = "EDGEPLAN_VAR_";
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
  unresolved?: true;
}

/**
 * The text with every `${var.NAME}` and `${EDGEPLAN_VAR_*}` replaced, or the problems found (each a complete
 * message); `unresolved` is true when a reference could not be replaced (with a problem, or unjudged). The values put
 * in use up `budget.left` characters (the texts of one document share one budget); once it is spent (-1), no value
 * is put in.
 */
export function substitute(text: string, env: Env, vars: VarSource = null, budget = { left: MAX_ADDED_CHARS }): Substituted {
  const problems: string[] = [];
  let unresolved = false;
  const out = text.replace(REFERENCE, (match, name: string | undefined) => {
    if (match === "$${") return "${";
    if (name === undefined) {
      problems.push("${ is not closed by }; close the variable reference, or write $${ for a literal ${");
      return match;
    }
    const found = resolve(name, env, vars);
    if ("value" in found && found.value.length <= budget.left) {
      budget.left -= found.value.length;
      return found.value;
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
  return unresolved || problems.length > 0 ? { text: out, problems, unresolved: true } : { text: out, problems };
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
 * Replaces variables in every string value and every mapping key of a document, in place. Returns one error per
 * problem, at the value or key that holds it, and the data paths of the values (and keys) left as written because
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
      const result = substitute(node.value, env, vars, budget);
      const pos = d.at(startOf(node) ?? 0);
      for (const message of result.problems) diagnostics.push({ severity: "error", pos, message });
      if (result.unresolved) unresolved.push(dataPath(ancestors, node));
      else {
        keyReplaced ||= key === "key" && node.value !== result.text;
        node.value = result.text;
      }
    },
  });
  if (keyReplaced) diagnostics.push(...repeatedKeys(d));
  return { diagnostics, unresolved };
}
