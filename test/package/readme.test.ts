/**
 * Every command the README shows runs, as shown, on the packed and installed package, in an empty folder: each
 * `sh`/`bash` block is one bash script that must exit 0; each `$ ` line of a `console` block must exit 0 and print
 * every output line shown under it (`...` stands for lines left out). Files the README says to save are saved from
 * their blocks (`<!-- test: file PATH -->`); a server it starts in a second terminal (`<!-- test: background -->`)
 * runs in the background, on a free port the later commands are pointed at. Blocks that need the registry, GitHub or
 * an account (`<!-- test: skip (why) -->`) are skipped, and there may be only a few of them.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/server.js";
import { cleanEnv, installPackage, VERSION } from "./install.js";
import { consoleSteps, type FencedBlock, fencedBlocks, SHELL_LANGS } from "./readme-blocks.js";

const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const blocks = fencedBlocks(README);
/** The address the README gives the server; the test's server listens on a free port instead. */
const README_URL = "http://127.0.0.1:4780";

/** What a block's commands must print beyond exiting 0, keyed by the block's first line. */
const EXPECTED: Record<string, (out: string, folder: string) => void> = {
  "edgeplan --version": (out) => expect(out).toBe(`${VERSION}\n`),
  "edgeplan demo": (out) => expect(out).toContain("Demo done: the second plan has nothing to do."),
  "edgeplan validate manifests     # exit 1 on any error": (out) => expect(out).toContain("1 file, 2 objects: 0 errors, 0 warnings"),
  "edgeplan plan --local --fixtures fixtures.yaml manifests": (out) =>
    expect(out).toContain("Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete."),
  "edgeplan export --out exported": (out, folder) => {
    expect(out).toContain('exported 1 weighted backend (1 owned by stack "default") and 1 route of 1 edge to exported');
    expect(readFileSync(join(folder, "exported", "weighted-backends", "checkout.yaml"), "utf8")).toContain("name: checkout");
  },
};

interface Shell {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** `export` lines seen so far, run before each later command, as one shell session would keep them. */
  exports: string[];
  /** The background server's address, once started. */
  url?: string;
}

/** Runs `script` in bash after the exports so far; returns its exit code and everything it printed. */
function bash(shell: Shell, script: string): { code: number | null; out: string } {
  const pointed = shell.url === undefined ? script : script.replaceAll(README_URL, shell.url);
  const res = spawnSync("bash", ["-e", "-c", [...shell.exports, pointed].join("\n")], { cwd: shell.cwd, env: shell.env, encoding: "utf8", timeout: 60_000 });
  for (const line of pointed.split("\n")) if (line.startsWith("export ")) shell.exports.push(line);
  return { code: res.status, out: `${res.stdout}${res.stderr}` };
}

/** Starts the block's one command in the background on a free port; resolves with its address once it listens. */
function background(shell: Shell, block: FencedBlock, started: ChildProcess[]): Promise<string> {
  const command = block.body.replace(/\s+#.*$/, "").trim();
  expect(command, `README.md:${block.line}: a background block holds one command`).not.toContain("\n");
  const proc = spawn("bash", ["-c", `exec ${command} --port 0`], { cwd: shell.cwd, env: shell.env, stdio: ["ignore", "pipe", "pipe"] });
  started.push(proc);
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`README.md:${block.line}: no "listening on" within 20 s: ${out}`)), 20_000);
    proc.stderr?.setEncoding("utf8").on("data", (s: string) => (out += s));
    proc.stdout?.setEncoding("utf8").on("data", (s: string) => {
      out += s;
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    proc.once("exit", (code) => reject(new Error(`README.md:${block.line}: exited ${code} before listening: ${out}`)));
  });
}

/** Runs each `$ ` line of a console block and checks the lines shown under it. */
function runConsole(shell: Shell, block: FencedBlock): void {
  for (const step of consoleSteps(block.body)) {
    const { code, out } = bash(shell, step.command);
    expect(code, `README.md:${block.line}: $ ${step.command}\n${out}`).toBe(0);
    const printed = new Set(out.split("\n").map((l) => l.trimEnd()));
    for (const line of step.shown.filter((l) => l !== "...")) {
      expect(printed.has(line.trimEnd()), `README.md:${block.line}: $ ${step.command} did not print:\n${line}\nIt printed:\n${out}`).toBe(true);
    }
  }
}

/** The last line of the demo names a command for the user's own folder: it works there. */
function followDemo(shell: Shell, demoOutput: string): void {
  const last = demoOutput.trimEnd().split("\n").at(-1)!;
  const next = /in your own folder: (.+)$/.exec(last);
  expect(next, last).not.toBeNull();
  const { code, out } = bash(shell, next![1]!);
  expect(code, `${next![1]}\n${out}`).toBe(0);
  expect(out).toContain("Plan: 12 to create (6 weighted backends, 5 modules, 1 inventory record), 0 to update, 0 to delete.");
}

describe("the README's commands, on the installed package", () => {
  const started: ChildProcess[] = [];
  afterAll(() => {
    for (const proc of started) proc.kill("SIGTERM");
  });

  it("few blocks are skipped, each saying why, and every expectation names a block that runs", () => {
    const skipped = blocks.filter((b) => b.marker?.startsWith("skip"));
    expect(skipped.map((b) => b.marker)).toEqual(skipped.map(() => expect.stringMatching(/^skip \(.+\)$/)));
    expect(skipped.length).toBeLessThanOrEqual(4);
    const run = blocks.filter((b) => SHELL_LANGS.has(b.lang) && b.marker === undefined).map((b) => b.body.split("\n")[0]);
    for (const key of Object.keys(EXPECTED)) expect(run, key).toContain(key);
  });

  it("installs, then runs every block in an empty folder", async () => {
    const { work, app } = await installPackage();
    const folder = join(work, "user");
    mkdirSync(folder);
    const env = { ...withoutEdgeplanVars(cleanEnv()), PATH: [join(app, "node_modules", ".bin"), process.env.PATH].join(delimiter) };
    const shell: Shell = { cwd: folder, env, exports: [] };
    expect(readdirSync(folder)).toEqual([]);
    let ran = 0;
    for (const block of blocks) {
      if (block.marker?.startsWith("file ")) {
        const file = join(folder, block.marker.slice("file ".length));
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, `${block.body}\n`);
      } else if (block.marker === "background") {
        shell.url = await background(shell, block, started);
      } else if (SHELL_LANGS.has(block.lang) && block.marker === undefined) {
        ran++;
        if (block.lang === "console") runConsole(shell, block);
        else {
          const { code, out } = bash(shell, block.body);
          expect(code, `README.md:${block.line}:\n${block.body}\n${out}`).toBe(0);
          EXPECTED[block.body.split("\n")[0]!]?.(out, folder);
          if (block.body === "edgeplan demo") followDemo(shell, out);
        }
      }
    }
    expect(ran).toBeGreaterThanOrEqual(6);
    expect(shell.url).toBeDefined();
    expect(existsSync(join(folder, "edgeplan.db"))).toBe(true);
  }, 300_000);
});

/** The environment without EDGEPLAN_* variables, so that only what the README sets reaches the commands. */
function withoutEdgeplanVars(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith("EDGEPLAN_")));
}
