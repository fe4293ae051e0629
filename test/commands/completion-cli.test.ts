/**
 * `edgeplan completion bash|zsh|fish` with the built CLI. What each script must complete is read from commander's
 * own rendering of its definitions, `edgeplan --help` and `edgeplan COMMAND --help`, not from a list kept here; the
 * bash script is parsed by `bash -n` and run as bash runs it on a Tab.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI } from "../helpers/cli-path.js";

function edgeplan(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8", env: { PATH: process.env.PATH ?? "" } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The flags of an `Options:` section of commander's help: `-h`, `--help`, `--format`, ... */
function optionsOf(help: string): string[] {
  const section = help.split(/^Options:\n/m)[1]?.split(/^\S.*:\n/m)[0] ?? "";
  // An option's line starts two spaces in; the wrapped lines of its description are indented further.
  return section.split("\n").flatMap((line) => {
    const m = /^ {2}((?:-\w, )?--[\w-]+)/.exec(line);
    return m ? (m[1] as string).split(", ") : [];
  });
}

/** The command names of `edgeplan --help`'s `Commands:` section, but `help`. */
function commandsOf(help: string): string[] {
  const section = help.split(/^Commands:\n/m)[1] ?? "";
  return section.split("\n").flatMap((line) => {
    const m = /^ {2}([a-z][\w-]*)/.exec(line);
    return m && m[1] !== "help" ? [m[1] as string] : [];
  });
}

/** The part of a script that completes the options of one command. */
function partOf(shell: string, script: string, command: string): string {
  const lines = script.split("\n");
  if (shell === "bash") return lines.find((l) => l.startsWith(`    ${command}) opts=`)) ?? "";
  if (shell === "fish") return lines.filter((l) => l.includes(`'__fish_seen_subcommand_from ${command}'`)).join("\n");
  const start = lines.indexOf(`    ${command})`);
  return start < 0 ? "" : lines.slice(start, lines.indexOf("      ;;", start)).join("\n");
}

let commands: string[];
const optionsByCommand = new Map<string, string[]>();
let dir: string;

beforeAll(() => {
  commands = commandsOf(edgeplan(["--help"]).stdout);
  for (const c of commands) optionsByCommand.set(c, optionsOf(edgeplan([c, "--help"]).stdout));
  dir = mkdtempSync(join(tmpdir(), "edgeplan-completion-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("edgeplan completion", () => {
  it("reads commander's definitions: every command, and each command's options", () => {
    // The parse of the help above finds what it must, so the checks below are not vacuous.
    expect(commands).toContain("plan");
    expect(commands).toContain("completion");
    expect(optionsByCommand.get("plan")).toContain("--format");
    expect(optionsByCommand.get("apply")).toContain("--ack");
    expect(optionsByCommand.get("fmt")).toEqual(["--config", "--env", "--check", "-h", "--help"]);
  });

  for (const shell of ["bash", "zsh", "fish"]) {
    it(`${shell}: the script names every command and every option of each`, () => {
      const r = edgeplan(["completion", shell]);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
      for (const c of commands) {
        expect(r.stdout, `command ${c}`).toMatch(new RegExp(`(^|[\\s'"])${c}[\\s:)'"]`, "m"));
        const part = partOf(shell, r.stdout, c);
        for (const o of optionsByCommand.get(c) ?? []) {
          // fish names a flag without its dashes: -l format, -s h.
          const written = shell === "fish" ? (o.startsWith("--") ? `-l ${o.slice(2)} ` : `-s ${o.slice(1)} `) : o;
          expect(part, `${c} ${o}`).toContain(written);
        }
      }
    });
  }

  it("bash: the script parses, and completes commands, flags and their values", () => {
    const script = edgeplan(["completion", "bash"]).stdout;
    const file = join(dir, "edgeplan.bash");
    writeFileSync(file, script);
    expect(spawnSync("bash", ["-n", file], { encoding: "utf8" })).toMatchObject({ status: 0, stderr: "" });
    const complete = (...words: string[]): string => {
      const body = `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _edgeplan; echo "\${COMPREPLY[*]}"`;
      const r = spawnSync("bash", ["-c", body], { encoding: "utf8", cwd: dir });
      expect(r.stderr).toBe("");
      return r.stdout.trim();
    };
    expect(complete("edgeplan", "fm")).toBe("fmt");
    expect(complete("edgeplan", "fmt", "--ch")).toBe("--check");
    expect(complete("edgeplan", "show", "plan.json", "--format", "")).toBe("text json markdown html");
    expect(complete("edgeplan", "completion", "")).toBe("bash zsh fish");
    expect(complete("edgeplan", "rollout", "")).toBe("status promote abort retry");
    expect(complete("edgeplan", "state", "")).toBe("list release");
  });

  it("refuses a shell it does not know", () => {
    const r = edgeplan(["completion", "tcsh"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error: command-argument value 'tcsh' is invalid for argument 'shell'. Allowed choices are bash, zsh, fish.");
  });
});
