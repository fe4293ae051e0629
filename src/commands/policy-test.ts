/**
 * `edgeplan policy test [DIR]`: runs the cases of a folder (default `policies/tests`) against the project's
 * policies (docs/policies.md, "Testing policies"). Each case is a YAML file with a change (and optionally the plan
 * and the environment) and the verdict each named policy should give; the command prints each case's outcome and a
 * summary. Exit 0 when every case gives what it expects, 1 when any does not or cannot be read.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { judgeCase, type Policy, type PolicyCaseInput } from "../core/policies.js";
import { EdgeplanError, EXIT, fileErrorReason, formatDiagnostic, type Diagnostic } from "../model/errors.js";
import { PolicyCaseSchema, type PolicyCase } from "../model/project-schema.js";
import { checkAgainstSchema } from "../manifest/check-document.js";
import { decodeManifest, parseOneDocument, Pinner } from "../manifest/yaml-source.js";
import type { CommandIO } from "./io.js";
import { withProjectFile } from "./project.js";

/** The folder of cases when none is named. */
export const DEFAULT_POLICY_TESTS = path.join("policies", "tests");

export interface PolicyTestOptions {
  /** The project file (`--config`); default `edgeplan.yaml` of the working directory. */
  config?: string;
  /** The project file's environment whose policies are tested (`--env`, else EDGEPLAN_ENV). */
  env?: string;
}

/** What one case gave: nothing wrong, or the lines that say what differs (or why it could not run). */
interface CaseOutcome {
  file: string;
  problems: string[];
}

/**
 * Runs every case of `dir` (relative to `io.cwd`; `.yaml` and `.yml` files, in name order) and prints the outcome.
 * @throws EdgeplanError when the project defines no policy, or the folder cannot be read or holds no case.
 */
export async function runPolicyTest(dir: string | undefined, options: PolicyTestOptions, io: CommandIO): Promise<number> {
  const { policies } = await withProjectFile<{ paths: string[]; config?: string; env?: string; policies?: Policy[] }>({ paths: [], ...options }, io);
  if (!policies || policies.length === 0) {
    throw new EdgeplanError(`${options.config ?? "edgeplan.yaml"}: the project defines no policy to test; declare them under policies: or policy_files: (docs/policies.md)`);
  }
  const folder = dir ?? DEFAULT_POLICY_TESTS;
  const names = await readdir(path.resolve(io.cwd, folder)).catch((err: unknown) => {
    throw new EdgeplanError(`${folder}: cannot read the folder of policy tests (${fileErrorReason(err)}); name the folder: edgeplan policy test DIR`);
  });
  const files = names.filter((n) => /\.ya?ml$/.test(n)).sort();
  if (files.length === 0) throw new EdgeplanError(`${folder}: no test case (.yaml files) in this folder; docs/policies.md shows how a case is written`);
  const outcomes: CaseOutcome[] = [];
  for (const name of files) {
    const file = path.join(folder, name);
    const outcome = await runCase(path.resolve(io.cwd, file), file, policies);
    outcomes.push(outcome);
    io.stdout(`${outcome.problems.length === 0 ? "ok  " : "FAIL"} ${file}\n${outcome.problems.map((p) => `  ${p}\n`).join("")}`);
  }
  const failed = outcomes.filter((o) => o.problems.length > 0).length;
  const n = outcomes.length;
  io.stdout(`${n} ${n === 1 ? "case" : "cases"}: ${n - failed} passed, ${failed} failed\n`);
  return failed === 0 ? EXIT.ok : EXIT.error;
}

/** Reads one case and compares what the policies give with what it expects. */
async function runCase(absolute: string, file: string, policies: readonly Policy[]): Promise<CaseOutcome> {
  const read = await readCase(absolute, file);
  if ("diagnostics" in read) return { file, problems: read.diagnostics.map(formatDiagnostic) };
  const { data, pin } = read;
  const known = policies.map((p) => p.name);
  const unknown = Object.keys(data.expect).filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    return {
      file,
      problems: unknown.map((name) =>
        formatDiagnostic({ severity: "error", pos: pin.key(["expect", name]), message: `expect: no policy is named "${name}"; the policies are ${known.join(", ")}` }),
      ),
    };
  }
  const verdicts = judgeCase(policies, caseInput(data, path.basename(file).replace(/\.ya?ml$/, "")));
  const problems: string[] = [];
  for (const [name, expected] of Object.entries(data.expect)) {
    const got = verdicts.get(name);
    if (got === undefined || got.verdict === expected) continue;
    problems.push(`${name}: expected ${expected}, got ${got.verdict}${got.message ? ` (${got.message})` : ""}`);
  }
  return { file, problems };
}

function caseInput(data: PolicyCase, name: string): PolicyCaseInput {
  const { change } = data;
  const input: PolicyCaseInput = { env: data.env ? { name: data.env.name, vars: data.env.vars ?? {} } : null };
  if (change) {
    const after = change.after ?? null;
    input.change = { address: change.address ?? name, kind: change.kind, action: change.action, before: change.before ?? null, after, final: change.final ?? after };
  }
  if (data.plan) input.plan = data.plan;
  return input;
}

/** A case file: one YAML document, checked against `PolicyCaseSchema`, with its positions. */
async function readCase(absolute: string, file: string): Promise<{ data: PolicyCase; pin: Pinner } | { diagnostics: Diagnostic[] }> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(absolute);
  } catch (err) {
    return { diagnostics: [{ severity: "error", pos: { file, line: 1, col: 1 }, message: `cannot read the case (${fileErrorReason(err)})` }] };
  }
  const decoded = decodeManifest(bytes, file);
  if ("diagnostic" in decoded) return { diagnostics: [decoded.diagnostic] };
  const read = parseOneDocument(decoded.text, file, "a case file holds one document; put each case in a file of its own");
  if ("errors" in read) return { diagnostics: read.errors };
  if (read.doc === null) return { diagnostics: [{ severity: "error", pos: { file, line: 1, col: 1 }, message: "the case is empty; write a change: and an expect:" }] };
  const checked = checkAgainstSchema(PolicyCaseSchema, read.doc, read.value);
  if (!checked.data) return { diagnostics: checked.diagnostics };
  return { data: checked.data, pin: new Pinner(read.doc) };
}
