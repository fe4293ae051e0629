/**
 * `${VAR}` in manifest string values. Only variables named `EDGEPLAN_VAR_*` are read, so that a manifest changed in a
 * pull request cannot copy the runner's secrets (tokens, keys) into a plan that is then printed or commented.
 * `$${` writes a literal `${`. Pure: the environment is passed in.
 */
import { isPair, isSeq, visit } from "yaml";
import type { Diagnostic } from "../model/errors.js";
import { startOf, type ParsedDocument } from "./yaml-source.js";

export const VAR_PREFIX = "EDGEPLAN_VAR_";
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type Env = Record<string, string | undefined>;

/** `$${` (a literal `${`), `${NAME}`, or a `${` that no `}` closes. */
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{[^}]*$/g;

/** Why `${name}` cannot be replaced, or undefined when it can. */
function referenceProblem(name: string, env: Env): string | undefined {
  if (!VAR_NAME.test(name)) {
    return `\${${name}} is not a variable reference: a name has letters, digits and _; write $\${${name}} for the literal text`;
  }
  if (!name.startsWith(VAR_PREFIX)) {
    return (
      `\${${name}}: only ${VAR_PREFIX}* variables can be used, so that a manifest cannot read the runner's secrets; ` +
      `set ${VAR_PREFIX}${name} and write \${${VAR_PREFIX}${name}}, or write $\${${name}} for the literal text`
    );
  }
  if (env[name] === undefined) return `\${${name}}: ${name} is not set; set it in edgeplan's environment, or write $\${${name}} for the literal text`;
  return undefined;
}

/** The text with every `${EDGEPLAN_VAR_*}` replaced, or the problems found (each a complete message). */
export function substitute(text: string, env: Env): { text: string; problems: string[] } {
  const problems: string[] = [];
  const out = text.replace(REFERENCE, (match, name: string | undefined) => {
    if (match === "$${") return "${";
    if (name === undefined) {
      problems.push("${ is not closed by }; close the variable reference, or write $${ for a literal ${");
      return match;
    }
    const problem = referenceProblem(name, env);
    if (problem !== undefined) problems.push(problem);
    return problem === undefined ? (env[name] as string) : "";
  });
  return { text: out, problems };
}

/** The data path (keys and indexes) of a node, from the ancestors `visit` passes. */
function dataPath(ancestors: readonly unknown[], node: unknown): PropertyKey[] {
  const path: PropertyKey[] = [];
  ancestors.forEach((a, i) => {
    const child = ancestors[i + 1] ?? node;
    if (isPair(a)) {
      const key = a.key as { value?: unknown } | null;
      path.push(String(key !== null && typeof key === "object" && "value" in key ? key.value : key));
    } else if (isSeq(a)) {
      path.push(a.items.indexOf(child as never));
    }
  });
  return path;
}

/**
 * Replaces variables in every string value of a document, in place (keys are left as written). Returns one error
 * per problem, at the value that holds it, and the data paths of the values left as written because of one.
 */
export function interpolateDocument(d: ParsedDocument, env: Env): { diagnostics: Diagnostic[]; unresolved: PropertyKey[][] } {
  const diagnostics: Diagnostic[] = [];
  const unresolved: PropertyKey[][] = [];
  if (!d.mayInterpolate) return { diagnostics, unresolved };
  visit(d.doc, {
    Scalar(key, node, ancestors) {
      if (key === "key" || typeof node.value !== "string" || !node.value.includes("$")) return;
      const { text, problems } = substitute(node.value, env);
      const pos = d.at(startOf(node) ?? 0);
      for (const message of problems) diagnostics.push({ severity: "error", pos, message });
      if (problems.length === 0) node.value = text;
      else unresolved.push(dataPath(ancestors, node));
    },
  });
  return { diagnostics, unresolved };
}
