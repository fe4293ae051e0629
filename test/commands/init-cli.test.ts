/**
 * `edgeplan init` end to end with the built CLI (no terminal: flags and defaults), and in this process with a fake
 * terminal for its questions: the files written, exactly, a folder with files refused, and `validate` passing on
 * what it wrote.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInit } from "../../src/commands/init.js";
import { captureIO, EndOfInputError } from "../../src/commands/io.js";
import { runCliIn } from "../helpers/server.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-init-"));
  dirs.push(dir);
  return dir;
}

const edgeplan = runCliIn;

const read = (dir: string, file: string): string => readFileSync(join(dir, file), "utf8");

const PROJECT = (stack: string, apiUrl: string | null): string =>
  "# The project file: what `edgeplan plan`, `apply`, `export`, `validate` and `fmt` run with in this folder when no\n" +
  "# flag (and no environment variable) says otherwise. The API key never goes here: set EDGEPLAN_API_KEY.\n" +
  "paths: [manifests]\n" +
  `stack: ${stack}\n` +
  (apiUrl === null ? "# api_url: https://api.example.com   # or EDGEPLAN_API_URL; without one, try it with --local\n" : `api_url: ${apiUrl}\n`);

const EXAMPLE = `# A weighted backend: traffic split between child backends by integer weight (0 to 10000 each).
kind: WeightedBackend
name: example
description: Example, 90/10 between two backends
backends:
  # The child ids are those of backends that exist in your account: list them with the API
  # (GET /backends/tunnel_group, /backends/http_response, ...) or in the dashboard. A key may also be the name of
  # another WeightedBackend in these manifests. With --local these ids are created for you.
  bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR: 9000
  bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq: 1000
`;

describe("edgeplan init (built CLI, no terminal)", () => {
  it("writes the project file, .gitignore and a first manifest that validate accepts", async () => {
    const dir = tempDir();
    const r = await edgeplan(dir, ["init", "--stack", "shop"]);
    expect(r).toEqual({
      code: 0,
      stdout: "wrote edgeplan.yaml\nwrote .gitignore\nwrote manifests/example.yaml\n",
      stderr: "next: edgeplan validate && edgeplan plan --local\n",
    });
    expect(readdirSync(dir).sort()).toEqual([".gitignore", "edgeplan.yaml", "manifests"]);
    expect(read(dir, "edgeplan.yaml")).toBe(PROJECT("shop", null));
    expect(read(dir, ".gitignore")).toBe(".edgeplan/\n");
    expect(read(dir, "manifests/example.yaml")).toBe(EXAMPLE);

    const validate = await edgeplan(dir, ["validate"]);
    expect(validate).toEqual({ code: 0, stdout: "1 file, 1 object: 0 errors, 0 warnings\n", stderr: "" });
    // The layout init writes is the one fmt writes.
    expect(await edgeplan(dir, ["fmt", "--check"])).toEqual({ code: 0, stdout: "", stderr: "0 files of 1 not formatted\n" });
    // The next step it prints works as printed, with no account.
    const plan = await edgeplan(dir, ["plan", "--local"]);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain("Plan: 1 to create, 0 to update, 0 to delete.\n");
    expect(readdirSync(dir).sort()).toEqual([".edgeplan", ".gitignore", "edgeplan.yaml", "manifests"]);
  });

  it("refuses a folder where its files exist, naming them, and writes nothing", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "edgeplan.yaml"), "stack: mine\n");
    const r = await edgeplan(dir, ["init"]);
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: "edgeplan: init: edgeplan.yaml already exists; nothing was written. Keep it, or run init --force to overwrite\n",
    });
    expect(readdirSync(dir)).toEqual(["edgeplan.yaml"]);
    expect(read(dir, "edgeplan.yaml")).toBe("stack: mine\n");
  });

  it("with --dir and --api-url: adds .edgeplan/ to an existing .gitignore once, and --force rewrites its files", async () => {
    const parent = tempDir();
    const r = await edgeplan(parent, ["init", "--dir", "proj", "--api-url", "https://api.example.com"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("wrote proj/edgeplan.yaml\nwrote proj/.gitignore\nwrote proj/manifests/example.yaml\n");
    expect(r.stderr).toBe("next: cd proj && edgeplan validate && edgeplan plan\n");
    const dir = join(parent, "proj");
    expect(read(dir, "edgeplan.yaml")).toBe(PROJECT("default", "https://api.example.com"));

    writeFileSync(join(dir, ".gitignore"), "node_modules/");
    const again = await edgeplan(parent, ["init", "--dir", "proj"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      "edgeplan: init: proj/edgeplan.yaml and proj/manifests/example.yaml already exist; nothing was written. Keep them, or run init --force to overwrite\n",
    );
    const forced = await edgeplan(parent, ["init", "--dir", "proj", "--force"]);
    expect(forced.stdout).toBe("wrote proj/edgeplan.yaml\nadded .edgeplan/ to proj/.gitignore\nwrote proj/manifests/example.yaml\n");
    expect(read(dir, ".gitignore")).toBe("node_modules/\n.edgeplan/\n");
    expect(read(dir, "edgeplan.yaml")).toBe(PROJECT("default", null));
    const thrice = await edgeplan(parent, ["init", "--dir", "proj", "--force"]);
    expect(thrice.stdout).toBe("wrote proj/edgeplan.yaml\nwrote proj/manifests/example.yaml\n");
    expect(read(dir, ".gitignore")).toBe("node_modules/\n.edgeplan/\n");
  });

  it("refuses a stack that is not a name, or an API URL that is not one, before writing", async () => {
    const dir = tempDir();
    const stack = await edgeplan(dir, ["init", "--stack", "My Stack"]);
    expect(stack.code).toBe(1);
    expect(stack.stderr).toBe(
      'edgeplan: init: stack "My Stack" is not a valid name: lower-case letters, digits and "-", starting and ending with a letter or digit, at most 63 characters\n',
    );
    const url = await edgeplan(dir, ["init", "--api-url", "ftp://x"]);
    expect(url.code).toBe(1);
    expect(url.stderr).toBe('edgeplan: --api-url: only http and https are supported, got "ftp"\n');
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("runInit on a terminal", () => {
  it("asks for the stack and the API URL, showing the defaults, and writes the answers", async () => {
    const dir = tempDir();
    const io = captureIO({}, dir);
    const answers = ["payments\n", "http://127.0.0.1:4780\n"];
    const questions: string[] = [];
    io.stdinIsTTY = true;
    io.prompt = async (q) => {
      questions.push(q);
      return answers.shift() ?? "";
    };
    expect(await runInit({ stack: "shop" }, io)).toBe(0);
    expect(questions).toEqual([
      "Stack name, kept in the owner markers of what edgeplan creates [shop]: ",
      "API URL [none: EDGEPLAN_API_URL, or --local to try without an account]: ",
    ]);
    expect(read(dir, "edgeplan.yaml")).toBe(PROJECT("payments", "http://127.0.0.1:4780"));
  });

  it("takes the defaults on empty answers, and asks nothing with --yes", async () => {
    const dir = tempDir();
    const io = captureIO({}, dir);
    let asked = 0;
    io.stdinIsTTY = true;
    io.prompt = async () => {
      asked++;
      return "";
    };
    expect(await runInit({}, io)).toBe(0);
    expect(asked).toBe(2);
    expect(read(dir, "edgeplan.yaml")).toBe(PROJECT("default", null));
    const other = tempDir();
    expect(await runInit({ yes: true, stack: "s1" }, { ...io, cwd: other })).toBe(0);
    expect(asked).toBe(2);
    expect(read(other, "edgeplan.yaml")).toBe(PROJECT("s1", null));
  });
  it("asks again after a bad answer, saying why, at most 3 times, and exits 1 at the end of input", async () => {
    const terminal = (answers: (string | null)[]) => {
      const io = captureIO({}, tempDir());
      io.stdinIsTTY = true;
      io.prompt = async () => {
        const a = answers.shift();
        if (a === null || a === undefined) throw new EndOfInputError();
        return a;
      };
      return io;
    };
    const bad = (name: string) =>
      `init: stack "${name}" is not a valid name: lower-case letters, digits and "-", starting and ending with a letter or digit, at most 63 characters`;
    const io = terminal(["Shop", "shop", "ftp://x", "http://127.0.0.1:4780"]);
    expect(await runInit({}, io)).toBe(0);
    expect(io.err).toBe(
      `${bad("Shop")}; try again (2 tries left)\n` +
        `--api-url: only http and https are supported, got "ftp"; try again (2 tries left)\n` +
        "next: edgeplan validate && edgeplan plan\n",
    );
    expect(read(io.cwd, "edgeplan.yaml")).toBe(PROJECT("shop", "http://127.0.0.1:4780"));

    const stubborn = terminal(["A", "B", "C", "ok"]);
    await expect(runInit({}, stubborn)).rejects.toThrow(bad("C"));
    expect(stubborn.err).toBe(`${bad("A")}; try again (2 tries left)\n${bad("B")}; try again (1 try left)\n`);
    expect(readdirSync(stubborn.cwd)).toEqual([]);

    const ended = terminal(["Shop", null]);
    await expect(runInit({}, ended)).rejects.toThrow("init: the input ended before an answer; nothing was written: run init again, or pass --yes with --stack and --api-url");
    expect(readdirSync(ended.cwd)).toEqual([]);
  });
});
