/**
 * The policies of a project file, loaded from real files in a temporary folder: compiled, or refused at the
 * `file:line:col` of the problem (syntax and type errors inside the expression, hostile expressions, names used
 * twice, policy files outside the project's folder).
 */
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadProjectFile } from "../../src/project/project-file.js";
import { formatDiagnostic } from "../../src/model/errors.js";
import { projectFolders } from "./folder.js";

const folder = projectFolders("edgeplan-policies-");

/** A project file of one policy with this expression line (written as given, after `expression: `). */
function oneRule(expression: string, extra = ""): string {
  return `policies:\n  - name: rule\n    description: Holds.\n    level: warn\n${extra}    expression: ${expression}\n`;
}

async function errorsOf(files: Record<string, string>): Promise<string[]> {
  const result = await loadProjectFile(folder(files));
  expect(result.settings).toEqual({});
  return result.diagnostics.map(formatDiagnostic);
}

describe("policies in the project file", () => {
  it("are compiled, from the file and from the policy files it names, in that order", async () => {
    const dir = folder({
      "edgeplan.yaml": `stack: s\n${oneRule("'change.action == \"create\"'")}policy_files: [rules/*.yaml, more.yaml]\n`,
      "rules/b.yaml": "policies:\n  - {name: b, description: B., level: deny, expression: 'true'}\n",
      "rules/a.yaml": "policies:\n  - {name: a, description: A., level: ack, match: {scope: plan}, expression: 'plan.summary.total < 10'}\n",
      "rules/notes.txt": "not a policy file",
      "more.yaml": "policies: []\n",
    });
    const result = await loadProjectFile(dir);
    expect(result.diagnostics).toEqual([]);
    expect(result.settings.stack).toBe("s");
    expect(result.settings.policies?.map((p) => [p.name, p.level, p.match])).toEqual([
      ["rule", "warn", {}],
      ["a", "ack", { scope: "plan" }],
      ["b", "deny", {}],
    ]);
  });

  it("report a syntax error and a type error at their place in the expression", async () => {
    // Plain and quoted scalars point at the character; a folded one at its start.
    expect(await errorsOf({ "edgeplan.yaml": oneRule("change.after. == 1") })).toEqual([
      "edgeplan.yaml:5:31: policy rule: Expected IDENTIFIER, got EQ; fix the expression (docs/policies.md lists what it may use)",
    ]);
    expect(await errorsOf({ "edgeplan.yaml": oneRule(`'change.action == "create" && 1 + "a" == 2'`) })).toEqual([
      "edgeplan.yaml:5:47: policy rule: no such overload: int + string; fix the expression (docs/policies.md lists what it may use)",
    ]);
    expect(await errorsOf({ "edgeplan.yaml": oneRule(">\n      change.action ==\n      change.after.") })).toEqual([
      "edgeplan.yaml:5:17: policy rule: Expected IDENTIFIER, got EOF; fix the expression (docs/policies.md lists what it may use)",
    ]);
    expect(await errorsOf({ "edgeplan.yaml": oneRule("'size(plan.changes)'") })).toEqual([
      "edgeplan.yaml:5:18: policy rule: the expression gives an int; it must give a bool (true or false); fix the expression (docs/policies.md lists what it may use)",
    ]);
  });

  it("refuse a policy over the whole plan that names `change`, and unknown variables", async () => {
    expect(await errorsOf({ "edgeplan.yaml": oneRule("'change.action == \"x\"'", "    match: {scope: plan}\n") })).toEqual([
      "edgeplan.yaml:6:18: policy rule: Unknown variable: change; fix the expression (docs/policies.md lists what it may use)",
    ]);
    expect(await errorsOf({ "edgeplan.yaml": oneRule("'process.env == null'") })).toEqual([
      "edgeplan.yaml:5:18: policy rule: Unknown variable: process; fix the expression (docs/policies.md lists what it may use)",
    ]);
  });

  it("refuse hostile expressions before they can cost anything", async () => {
    const deep = `${"(".repeat(5000)}true${")".repeat(5000)}`;
    expect(await errorsOf({ "edgeplan.yaml": oneRule(`'${deep}'`) })).toEqual([
      "edgeplan.yaml:5:18: policy rule: the expression is 10004 characters long; at most 8192 are allowed; fix the expression (docs/policies.md lists what it may use)",
    ]);
    expect(await errorsOf({ "edgeplan.yaml": oneRule(`'${"(".repeat(40)}true${")".repeat(40)}'`) })).toEqual([
      "edgeplan.yaml:5:50: policy rule: Exceeded maxDepth (32); fix the expression (docs/policies.md lists what it may use)",
    ]);
    expect(await errorsOf({ "edgeplan.yaml": oneRule("'plan.changes.all(a, plan.changes.all(b, a == b))'") })).toEqual([
      "edgeplan.yaml:5:38: policy rule: a all() inside another comprehension is not allowed (its cost would grow with the square of the list); write it without nesting; fix the expression (docs/policies.md lists what it may use)",
    ]);
    const huge = `'change.action == "${"x".repeat(1024 * 1024 - 200)}"'`;
    const [tooLong] = await errorsOf({ "edgeplan.yaml": oneRule(huge) });
    expect(tooLong).toMatch(/^edgeplan\.yaml:5:18: policy rule: the expression is 1048395 characters long; at most 8192 are allowed;/);
  });

  it("refuse a name used twice, a built-in rule's name, and a malformed name, each at its line", async () => {
    const rule = (name: string) => `  - {name: ${name}, description: D., level: warn, expression: 'true'}\n`;
    expect(await errorsOf({ "edgeplan.yaml": `policies:\n${rule("a")}${rule("a")}${rule("mass-delete")}` })).toEqual([
      'edgeplan.yaml:3:12: a policy named "a" is declared already; give each policy its own name',
      'edgeplan.yaml:4:12: the policy name "mass-delete" is a built-in risk rule\'s; give the policy another name',
    ]);
    const [bad] = await errorsOf({ "edgeplan.yaml": `policies:\n${rule("Two,Rules")}` });
    expect(bad).toMatch(/^edgeplan\.yaml:2:12: .*lower-case letters, digits and dashes/);
  });

  it("read policy files only inside the project's folder", async () => {
    const outside = folder({ "evil.yaml": "policies: []\n" });
    const dir = folder({
      "edgeplan.yaml": `policy_files: [../x.yaml, /etc/passwd, .git/p.yaml, rules/*.yaml, link.yaml, none/*.yaml, "*/*.yaml", "a*b*.yaml"]\n`,
      "rules/.keep": "",
    });
    symlinkSync(join(outside, "evil.yaml"), join(dir, "link.yaml"));
    const result = await loadProjectFile(dir);
    expect(result.diagnostics.map(formatDiagnostic)).toEqual([
      "edgeplan.yaml:1:16: policy_files: ../x.yaml: this path leads outside the project's folder (the folder of the project file); name a file or folder inside the project's folder, or give other paths on the command line",
      "edgeplan.yaml:1:27: policy_files: /etc/passwd: an absolute path is not read from the project file; name a file or folder inside the project's folder, or give other paths on the command line",
      "edgeplan.yaml:1:40: policy_files: .git/p.yaml: this path is inside .git/, which holds no manifests; name the folders of the manifests",
      "edgeplan.yaml:1:53: policy_files: rules/*.yaml matches no file; name the policy files, or remove this entry",
      "edgeplan.yaml:1:67: policy_files: link.yaml: a symbolic link on this path leads outside the project's folder; name a file or folder inside the project's folder, or give other paths on the command line",
      "edgeplan.yaml:1:78: policy_files: none/*.yaml: the folder none cannot be read; name a folder of the project",
      'edgeplan.yaml:1:91: policy_files: */*.yaml: "*" may stand only in the file name, not in a folder',
      'edgeplan.yaml:1:103: policy_files: a*b*.yaml: a file name may hold one "*" at most (rules/*.yaml)',
    ]);
  });

  it("report a policy file's own problems at its lines", async () => {
    const dir = folder({
      "edgeplan.yaml": "policy_files: p.yaml\n",
      "p.yaml": "policies:\n  - name: r\n    description: D.\n    level: block\n    expression: 'true'\n",
    });
    const [problem] = (await loadProjectFile(dir)).diagnostics.map(formatDiagnostic);
    expect(problem).toBe('p.yaml:4:12: policies[0].level: the text "block" is not allowed; use warn or ack or deny');
  });
});
