/**
 * Loading the policies of a project (docs/policies.md): those written under `policies:` in the project file, and
 * those of the files `policy_files:` names (inside the project's folder, as `paths`), each file a mapping with
 * `policies:`. Every expression is compiled here, so a policy that does not parse or type-check is a diagnostic at
 * its `file:line:col` before anything is read from the API.
 */
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { compilePolicyExpression, type Policy } from "../core/policies.js";
import { projectPathProblem } from "../model/confine.js";
import { fileErrorReason, type Diagnostic } from "../model/errors.js";
import { RISK_RULES } from "../model/plan.js";
import { PolicyFileSchema, type PolicyDeclaration, type ProjectFile } from "../model/project-schema.js";
import type { SourcePos } from "../model/state.js";
import { checkAgainstSchema } from "../manifest/check-document.js";
import { decodeManifest, parseOneDocument, Pinner, type ParsedDocument } from "../manifest/yaml-source.js";

/** The policies of a project, compiled, or the diagnostics that stop them from being used. */
export interface LoadedPolicies {
  policies: Policy[];
  diagnostics: Diagnostic[];
}

/** A declaration with the document it was read from and its path there, for positions. */
interface Declared {
  declaration: PolicyDeclaration;
  pin: Pinner;
  at: PropertyKey[];
}

const error = (pos: SourcePos, message: string): Diagnostic => ({ severity: "error", pos, message });

/**
 * Reads and compiles the project's policies: `doc` is the project file (already checked against its schema as
 * `file`), `dir` its folder, `shown` turns an absolute path into the name messages use. Never throws for a problem
 * of a file: each is a diagnostic.
 */
export async function loadPolicies(doc: ParsedDocument, file: ProjectFile, dir: string, shown: (absolute: string) => string): Promise<LoadedPolicies> {
  const pin = new Pinner(doc);
  const declared: Declared[] = (file.policies ?? []).map((declaration, i) => ({ declaration, pin, at: ["policies", i] }));
  const diagnostics: Diagnostic[] = [];
  const single = typeof file.policy_files === "string";
  const entries = typeof file.policy_files === "string" ? [file.policy_files] : (file.policy_files ?? []);
  for (const [i, written] of entries.entries()) {
    const where = pin.value(single ? ["policy_files"] : ["policy_files", i]);
    const found = await policyFilesOf(written, dir);
    if ("problem" in found) {
      diagnostics.push(error(where, `policy_files: ${found.problem}`));
      continue;
    }
    for (const absolute of found.files) {
      const read = await readPolicyFile(absolute, shown(absolute));
      diagnostics.push(...read.diagnostics);
      declared.push(...read.declared);
    }
  }
  const compiled = compileAll(declared);
  return { policies: compiled.policies, diagnostics: [...diagnostics, ...compiled.diagnostics] };
}

/** The files one `policy_files` entry names: a file, or a folder's files whose names match a `*` pattern, sorted. */
async function policyFilesOf(written: string, dir: string): Promise<{ files: string[] } | { problem: string }> {
  const pattern = path.basename(written);
  const folder = path.dirname(written);
  const globbed = pattern.includes("*");
  if (folder.includes("*")) return { problem: `${written}: "*" may stand only in the file name, not in a folder` };
  // One star is all a folder of policy files needs, and several would let a pattern cost time exponential in a name.
  if (pattern.split("*").length > 2) return { problem: `${written}: a file name may hold one "*" at most (rules/*.yaml)` };
  const realDir = await realpath(dir);
  const confined = async (p: string): Promise<string | undefined> => {
    const real = await realpath(path.resolve(dir, p)).catch(() => undefined);
    return projectPathProblem(p, real === undefined ? undefined : path.relative(realDir, real));
  };
  const problem = await confined(globbed ? folder : written);
  if (problem) return { problem: `${written}: ${problem}` };
  if (!globbed) return { files: [path.resolve(dir, written)] };
  const names = await readdir(path.resolve(dir, folder)).catch(() => undefined);
  if (names === undefined) return { problem: `${written}: the folder ${folder} cannot be read; name a folder of the project` };
  const match = new RegExp(`^${pattern.split("*").map(escapeRegExp).join(".*")}$`);
  const files: string[] = [];
  for (const name of names.filter((n) => match.test(n)).sort()) {
    const relative = path.join(folder, name);
    const linked = await confined(relative);
    if (linked) return { problem: `${relative}: ${linked}` };
    if ((await stat(path.resolve(dir, relative))).isFile()) files.push(path.resolve(dir, relative));
  }
  if (files.length === 0) return { problem: `${written} matches no file; name the policy files, or remove this entry` };
  return { files };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

/** One policy file: YAML with positions, one document, checked against `PolicyFileSchema`. */
async function readPolicyFile(absolute: string, shown: string): Promise<{ declared: Declared[]; diagnostics: Diagnostic[] }> {
  const start = { file: shown, line: 1, col: 1 };
  let bytes: Uint8Array;
  try {
    if (!(await stat(absolute)).isFile()) return { declared: [], diagnostics: [error(start, "not a regular file; name a YAML file of policies")] };
    bytes = await readFile(absolute);
  } catch (err) {
    return { declared: [], diagnostics: [error(start, `cannot read the policy file (${fileErrorReason(err)}); check policy_files in the project file`)] };
  }
  const decoded = decodeManifest(bytes, shown);
  if ("diagnostic" in decoded) return { declared: [], diagnostics: [decoded.diagnostic] };
  const read = parseOneDocument(decoded.text, shown, "a policy file holds one document; remove this one");
  if ("errors" in read) return { declared: [], diagnostics: read.errors };
  if (read.doc === null) return { declared: [], diagnostics: read.diagnostics };
  const checked = checkAgainstSchema(PolicyFileSchema, read.doc, read.value);
  if (!checked.data) return { declared: [], diagnostics: checked.diagnostics };
  const pin = new Pinner(read.doc);
  return { declared: checked.data.policies.map((declaration, i) => ({ declaration, pin, at: ["policies", i] })), diagnostics: read.diagnostics };
}

/** Compiles every expression; a name used twice, or one of a built-in risk, is an error at the later name. */
function compileAll(declared: readonly Declared[]): LoadedPolicies {
  const policies: Policy[] = [];
  const diagnostics: Diagnostic[] = [];
  const seen = new Set<string>();
  for (const { declaration: d, pin, at } of declared) {
    const nameAt = pin.value([...at, "name"]);
    if ((RISK_RULES as readonly string[]).includes(d.name)) {
      diagnostics.push(error(nameAt, `the policy name "${d.name}" is a built-in risk rule's; give the policy another name`));
      continue;
    }
    if (seen.has(d.name)) {
      diagnostics.push(error(nameAt, `a policy named "${d.name}" is declared already; give each policy its own name`));
      continue;
    }
    seen.add(d.name);
    const compiled = compilePolicyExpression(d.expression, d.match?.scope);
    if ("problem" in compiled) {
      const { message, start } = compiled.problem;
      diagnostics.push(error(pin.within([...at, "expression"], start), `policy ${d.name}: ${message}; fix the expression (docs/policies.md lists what it may use)`));
      continue;
    }
    const { scope, ...lists } = d.match ?? {};
    policies.push({ name: d.name, description: d.description, level: d.level, match: { ...lists, ...(scope ? { scope } : {}) }, program: compiled.program });
  }
  return { policies, diagnostics };
}
