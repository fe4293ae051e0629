/**
 * Every hint runs as printed: the commands `plan`, `apply`, `export`, `init` and the refusals print (`apply it with:`,
 * `next:`, `plan again with:`, `make a plan for ...:`, `remove it now with:`, and `apply it with --ack ...`, which
 * adds flags to the same command) are collected from realistic runs against real servers in this process, parsed, and
 * run in the same folder with the same variables, where each must succeed. So are the rollout commands that plan
 * notes, apply reports and `rollout status` quote (`run "edgeplan rollout promote web" to go on`): a plan does not say
 * how it was made, so the command that shows it adds the flags. A saved rollout step says at plan time until when it
 * can be applied, and applied later is refused as a stale plan with the command to plan again.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireLease, currentHolder, type HeldLease } from "../../src/apply/lease.js";
import { runApply } from "../../src/commands/apply.js";
import { runExport } from "../../src/commands/export.js";
import { runInit } from "../../src/commands/init.js";
import { captureIO, type CommandIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { runRolloutAbort, runRolloutPromote, runRolloutRetry, runRolloutStatus } from "../../src/commands/rollout.js";
import { openSession } from "../../src/commands/session.js";
import { runShow } from "../../src/commands/show.js";
import { runStateList, runStateRelease } from "../../src/commands/state.js";
import { runUnlock } from "../../src/commands/unlock.js";
import { whereText } from "../../src/commands/hints.js";
import { runValidate } from "../../src/commands/validate.js";
import { errorOutcome } from "../../src/model/errors.js";
import { FIXTURES, HR1, HR2, wbYaml } from "../apply/e2e.js";
import { apiClient, startTestServer, type TestServer } from "../helpers/server.js";

/** Where a command runs: its folder, its variables, and whether a person answers `yes` on a terminal. */
interface Situation {
  cwd: string;
  env: Record<string, string>;
  tty: boolean;
}

interface Ran {
  code: number;
  /** stdout and stderr, with a thrown error's message as the CLI prints it. */
  text: string;
}

/** The flags a hint may use, by command, as src/cli.ts declares them: a flag outside these fails the test. */
const WHERE = ["--config", "--env", "--api-url", "--api-key-file", "--local", "--insecure-http", "--version-header"];
const FLAGS: Record<string, readonly string[]> = {
  plan: [...WHERE, "--fixtures", "--stack", "--takeover", "--out", "--detailed-exitcode", "--format"],
  apply: [...WHERE, "--fixtures", "--stack", "--takeover", "--plan", "--auto-approve", "--ack", "--force", "--refresh", "--lock-timeout"],
  export: [...WHERE, "--fixtures", "--stack", "--takeover", "--out", "--force"],
  unlock: [...WHERE, "--lease-id", "--force"],
  validate: ["--config", "--env"],
  rollout: [...WHERE, "--stack", "--format", "--manifests", "--full", "--lock-timeout", "--lock-ttl"],
  state: [...WHERE, "--stack", "--format"],
  show: ["--format"],
};
const BOOLEAN = new Set(["--local", "--insecure-http", "--takeover", "--detailed-exitcode", "--auto-approve", "--force", "--refresh", "--full"]);
const ROLLOUT = { status: runRolloutStatus, promote: runRolloutPromote, abort: runRolloutAbort, retry: runRolloutRetry };

/** `--api-url` -> `apiUrl`. */
const key = (flag: string): string => flag.slice(2).replace(/-(\w)/g, (_m, c: string) => c.toUpperCase());

/** A command line's words (single quotes as the hints write them). */
function words(line: string): string[] {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replaceAll("'\\''", "'") : (m[2] as string)));
}

/** The command, its arguments and its options, refused (an Error) for a flag its command does not take. */
function parse(argv: string[]): { command: string; args: string[]; flags: Record<string, unknown> } {
  const [command = "", ...rest] = argv;
  const allowed = FLAGS[command];
  if (!allowed) throw new Error(`no runner for edgeplan ${command}`);
  const args: string[] = [];
  const flags: Record<string, unknown> = {};
  for (let i = 0; i < rest.length; i++) {
    const word = rest[i] as string;
    if (!word.startsWith("--")) {
      args.push(word);
      continue;
    }
    if (!allowed.includes(word)) throw new Error(`edgeplan ${command}: unknown option '${word}'`);
    if (BOOLEAN.has(word)) flags[key(word)] = true;
    else if (word === "--ack") flags.ack = [...((flags.ack as string[]) ?? []), rest[++i]];
    else flags[key(word)] = rest[++i];
  }
  return { command, args, flags };
}

/** Runs `edgeplan ARGV` in this process as the CLI would: the exit code, and everything it printed. */
async function run(argv: string[], s: Situation): Promise<Ran> {
  const { command, args, flags } = parse(argv);
  const io = captureIO(s.env, s.cwd);
  const tty: CommandIO = s.tty ? { ...io, stdinIsTTY: true, prompt: async () => "yes" } : io;
  let code: number;
  try {
    if (command === "plan") code = (await runPlan({ ...flags, paths: args }, tty)).exitCode;
    else if (command === "apply") code = (await runApply({ ...flags, paths: args }, tty)).exitCode;
    else if (command === "export") code = (await runExport({ ...flags, paths: args }, tty)).exitCode;
    else if (command === "unlock") code = await runUnlock(args[0] as string, flags, tty);
    else if (command === "rollout") code = await ROLLOUT[args[0] as keyof typeof ROLLOUT](args[1] as string, flags, tty);
    else if (command === "show") code = await runShow(args[0] as string, flags, tty);
    else if (command === "state") code = args[0] === "list" ? await runStateList(flags, tty) : await runStateRelease(args[1] as string, flags, tty);
    else {
      const write = { write: (t: string) => io.stderr(t) };
      code = await runValidate(args, { ...flags, envName: flags.env as string, cwd: s.cwd, env: s.env, stdout: write, stderr: write });
    }
  } catch (err) {
    const outcome = errorOutcome(err);
    io.stderr(`edgeplan: ${outcome.message}\n`);
    code = outcome.exitCode;
  }
  return { code, text: io.out + io.err };
}

/** A hint: a whole command line (`cd DIR && ` and `&&` chains allowed), or flags added to the command that printed it. */
type Hint = { line: string } | { add: string[] };

/**
 * The hints in a command's output: after a colon, or quoted (`run "edgeplan rollout promote web" to go on`); a command
 * with a placeholder (FILE, NAME) is a template, not a hint, and left out.
 */
function hintsIn(text: string): Hint[] {
  const hints: Hint[] = [];
  for (const m of text.matchAll(/: ((?:cd \S+ && )?edgeplan [a-z][^;\n"]*)|"(edgeplan [a-z][^"\n]*)"/g)) {
    const line = m[2] ?? (m[1] as string).replace(/[.)]$/, "");
    if (!/\b[A-Z]{3,}\b/.test(line)) hints.push({ line });
  }
  for (const m of text.matchAll(/apply it with ((?:--[a-z-]+ (?!--|\()\S+ ?)+)/g)) hints.push({ add: words(m[1] as string) });
  return hints.filter((h, i) => !("line" in h) || hints.findIndex((o) => "line" in o && o.line === h.line) === i);
}

/** Runs a hint in the situation; every command of a chain must exit 0 (2 for a plan with changes). */
async function runHint(hint: Hint, argv: string[], s: Situation): Promise<Ran[]> {
  if ("add" in hint) return [await run([...argv, ...hint.add], s)];
  let cwd = s.cwd;
  const done: Ran[] = [];
  for (const part of hint.line.split(" && ")) {
    const [first, ...rest] = words(part);
    if (first === "cd") cwd = join(cwd, rest[0] as string);
    else done.push(await run(rest, { ...s, cwd }));
  }
  return done;
}

const roots: string[] = [];
function folder(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-hints-"));
  roots.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

let server: TestServer;
let other: TestServer;
beforeAll(async () => {
  [server, other] = await Promise.all([startTestServer({ fixtures: FIXTURES }), startTestServer({ fixtures: FIXTURES })]);
});
afterAll(async () => {
  await Promise.all([server?.close(), other?.close()]);
  for (const d of roots) rmSync(d, { recursive: true, force: true });
});

/**
 * Runs `argv`, checks its exit code and the hints it printed (exactly), then runs each hint in the same situation and
 * expects every one to succeed. Returns what the first run printed.
 */
async function expectHintsRun(argv: string[], s: Situation, code: number, expected: string[]): Promise<string> {
  const first = await run(argv, s);
  expect(first.code, first.text).toBe(code);
  const hints = hintsIn(first.text);
  expect(hints.map((h) => ("line" in h ? h.line : `+ ${h.add.join(" ")}`))).toEqual(expected);
  for (const hint of hints) {
    for (const ran of await runHint(hint, argv, s)) expect(ran.code, `${JSON.stringify(hint)}:\n${ran.text}`).toBe(0);
  }
  return first.text;
}

const ENVIRONMENTS = (url: string): string =>
  [
    "paths: [manifests]",
    "environments:",
    "  staging:",
    `    api_url: ${url}`,
    "    stack: web-staging",
    "  production:",
    `    api_url: ${url}`,
    "    stack: web-production",
    "",
  ].join("\n");

describe("every hint runs as printed", () => {
  it("plan --env X --out f: apply --plan f takes the environment from the plan; another --env is refused with a new file to plan into", async () => {
    const cwd = folder({ "edgeplan.yaml": ENVIRONMENTS(server.url), "manifests/web.yaml": wbYaml("web", { [HR1]: 100 }) });
    const s: Situation = { cwd, env: { EDGEPLAN_API_KEY: server.apiKey }, tty: true };
    await expectHintsRun(["plan", "--env", "staging", "--out", "s.json"], s, 0, ["edgeplan apply --plan s.json"]);
    expect((await run(["plan", "--env", "staging", "--detailed-exitcode"], s)).code).toBe(0);

    await run(["plan", "--env", "staging", "--out", "t.json"], s);
    const refused = await expectHintsRun(["apply", "--plan", "t.json", "--env", "production"], s, 1, ["edgeplan plan --env production --out t-production.json"]);
    expect(refused).toBe(
      "edgeplan: --plan t.json: the plan was made for environment staging, and --env names production; nothing was sent. " +
        "apply --plan takes the environment from the plan: leave out --env to apply it in staging, or make a plan for production: " +
        "edgeplan plan --env production --out t-production.json\n",
    );
    // A plan saved before plans recorded their environment is applied as before: the environment is chosen here.
    const { environment: _made, ...older } = JSON.parse(readFileSync(join(cwd, "t.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(cwd, "old.json"), JSON.stringify(older));
    expect(await run(["apply", "--plan", "old.json"], s)).toEqual({
      code: 1,
      text: "edgeplan: edgeplan.yaml defines 2 environments (staging, production): choose one with --env NAME or EDGEPLAN_ENV\n",
    });
    const byVariable = await run(["apply", "--plan", "t.json"], { ...s, env: { ...s.env, EDGEPLAN_ENV: "production" } });
    expect(byVariable.code).toBe(1);
    expect(byVariable.text).toContain("and EDGEPLAN_ENV names production; nothing was sent. apply --plan takes the environment from the plan: leave out EDGEPLAN_ENV");
  });

  it("approval's --ack, export --api-url's next, the wrong API's new plan, and a held lease's unlock", async () => {
    const cwd = folder({ "m/shift.yaml": wbYaml("shift", { [HR1]: 100, [HR2]: 0 }) });
    const s: Situation = { cwd, env: { EDGEPLAN_API_KEY: server.apiKey }, tty: false };
    const url = ["--api-url", server.url];
    expect((await run(["apply", "m", ...url, "--auto-approve"], s)).code).toBe(0);
    writeFileSync(join(cwd, "m", "shift.yaml"), wbYaml("shift", { [HR1]: 0, [HR2]: 100 }));
    await expectHintsRun(["apply", "m", ...url, "--auto-approve"], s, 1, ["+ --ack traffic-shift"]);

    const exported = folder();
    await expectHintsRun(["export", ...url], { ...s, cwd: exported }, 0, [`edgeplan plan --api-url ${server.url} exported`]);

    writeFileSync(join(cwd, "m", "shift.yaml"), wbYaml("shift", { [HR1]: 50, [HR2]: 50 }));
    expect((await run(["plan", "m", ...url, "--out", "p.json"], s)).code).toBe(0);
    const reviewed = readFileSync(join(cwd, "p.json"), "utf8");
    const elsewhere = { ...s, env: { EDGEPLAN_API_KEY: other.apiKey } };
    await expectHintsRun(["apply", "--plan", "p.json", "--api-url", other.url, "--auto-approve"], elsewhere, 1, [`edgeplan plan --api-url ${other.url} --out p-new.json`]);
    // The reviewed plan is still the one reviewed.
    expect(readFileSync(join(cwd, "p.json"), "utf8")).toBe(reviewed);
    // A file that disagrees with itself: the plan to make again reaches the same API.
    const tampered = JSON.parse(reviewed) as { changes: Array<{ request: { body: { backends: Record<string, number> } } }> };
    (tampered.changes[0] as (typeof tampered.changes)[number]).request.body.backends = { [HR1]: 0, [HR2]: 10000 };
    writeFileSync(join(cwd, "t.json"), JSON.stringify(tampered));
    const refusedTampered = await run(["apply", "--plan", "t.json", ...url, "--auto-approve"], s);
    expect(refusedTampered.code).toBe(1);
    expect(refusedTampered.text).toContain(`make the plan again (edgeplan plan --api-url ${server.url} --out t.json), review it`);
    await runLines([`edgeplan plan --api-url ${server.url} --out t.json`], s);

    const session = await openSession({ apiUrl: server.url }, captureIO(s.env, cwd));
    let held: HeldLease | undefined;
    try {
      held = await acquireLease(session.client, { stack: "default", ttlMs: 60_000, timeoutMs: 0, holder: currentHolder({}), onWait: () => {} });
      await expectHintsRun(["apply", "m", ...url, "--auto-approve", "--lock-timeout", "0"], s, 1, [`edgeplan unlock default --lease-id ${held.id} --api-url ${server.url}`]);
    } finally {
      await held?.release().catch(() => null);
      await session.close();
    }
  });

  it("export --local's next, and init's next", async () => {
    const cwd = folder({ "m/blue.yaml": wbYaml("blue", { [HR1]: 100, [HR2]: 0 }) });
    const s: Situation = { cwd, env: {}, tty: true };
    expect((await run(["apply", "m", "--local", "--stack", "blue"], s)).code).toBe(0);
    await expectHintsRun(["export", "--local", "--stack", "blue", "--out", "exp"], s, 0, ["edgeplan plan --stack blue --local exp"]);
    await expectHintsRun(["apply", "m", "--plan", "none.json", "--local", "--stack", "blue"], s, 1, ["edgeplan plan m --stack blue --local --out none.json"]);

    const empty = folder();
    const io = captureIO({}, empty);
    expect(await runInit({ yes: true, dir: "proj" }, io)).toBe(0);
    expect(hintsIn(io.err)).toEqual([{ line: "cd proj && edgeplan validate && edgeplan plan --local" }]);
    for (const ran of await runHint({ line: "cd proj && edgeplan validate && edgeplan plan --local" }, [], { cwd: empty, env: {}, tty: false })) {
      expect(ran.code, ran.text).toBe(0);
    }
  });
});

/** Runs `argv` and returns the hints it printed, with its exit code checked; the hints are run later, by the test. */
async function hintsOf(argv: string[], s: Situation, code: number): Promise<string[]> {
  const ran = await run(argv, s);
  expect(ran.code, ran.text).toBe(code);
  return hintsIn(ran.text).map((h) => ("line" in h ? h.line : `+ ${h.add.join(" ")}`));
}

/** Runs each command line as printed in the situation; each must exit 0. */
async function runLines(lines: string[], s: Situation): Promise<void> {
  for (const line of lines) {
    for (const ran of await runHint({ line }, [], s)) expect(ran.code, `${line}:\n${ran.text}`).toBe(0);
  }
}

/** A rollout of `web` from HR1 to HR2 in three steps, the second a pause. */
const PAUSING = `${wbYaml("web", { [HR1]: 0, [HR2]: 100 })}rollout:\n  steps: [50, {pause: true}, 100]\n  interval: 1s\n`;

describe("the rollout commands that plans, apply reports and rollout status name", () => {
  it("run as printed after a rollout planned with --local and --stack: promote, abort, retry and status", async () => {
    const cwd = folder({ "m/web.yaml": wbYaml("web", { [HR1]: 100, [HR2]: 0 }) });
    const s: Situation = { cwd, env: {}, tty: false };
    const local = ["--local", "--stack", "roll"];
    expect((await run(["apply", "m", ...local, "--auto-approve"], s)).code).toBe(0);
    writeFileSync(join(cwd, "m", "web.yaml"), PAUSING);
    const rollout = (words: string): string => `edgeplan rollout ${words} --local --stack roll`;
    const [promote, retry, status] = [rollout("promote web"), rollout("retry web"), rollout("status")];
    // The first step, then the pause (exit 4): the plan says so, then the report; then the plan, apply and status.
    expect(await hintsOf(["apply", "m", ...local, "--auto-approve"], s, 4)).toEqual([promote]);
    expect(await hintsOf(["plan", "m", ...local], s, 0)).toEqual([promote]);
    expect(await hintsOf(["plan", "m", ...local, "--format", "markdown"], s, 0)).toEqual([promote]);
    expect(await hintsOf(["plan", "m", ...local, "--out", "p.json"], s, 0)).toEqual([promote, "edgeplan apply --plan p.json --local"]);
    expect(await hintsOf(["show", "p.json"], s, 0)).toEqual([promote]);
    expect((await run(["plan", "m", ...local, "--format", "html"], s)).text).toContain(`&quot;${promote}&quot;`);
    expect((await run(["plan", "m", ...local, "--format", "json"], s)).text).toContain('run \\"edgeplan rollout promote web\\" to go on');
    expect(await hintsOf(["apply", "m", ...local, "--auto-approve"], s, 4)).toEqual([promote]);
    expect(await hintsOf(["rollout", "status", ...local], s, 0)).toEqual([promote]);
    expect(await hintsOf(["rollout", "abort", "api", ...local], s, 1)).toEqual([status]);
    await runLines([status, promote], s);
    // Aborted, it is halted until the manifest changes or a retry.
    expect(await hintsOf(["rollout", "abort", "web", ...local], s, 0)).toEqual([retry]);
    expect(await hintsOf(["rollout", "status", ...local], s, 0)).toEqual([retry]);
    expect(await hintsOf(["rollout", "promote", "web", ...local], s, 1)).toEqual([retry]);
    await runLines([retry], s);
    // Retried, the rollout state is gone: an abort names the rollouts there are.
    expect(await hintsOf(["rollout", "abort", "web", ...local], s, 1)).toEqual([status]);
    // `state release` of an address the stack does not own names the `state list` of the same stack.
    expect(await hintsOf(["state", "release", "weighted_backend.nope", ...local], s, 1)).toEqual(["edgeplan state list --local --stack roll"]);
    await runLines(["edgeplan state list --local --stack roll"], s);
    // `unlock`, `rollout` and `state` take no --fixtures: the local server's file is read as it is.
    expect(whereText({ local: true, fixtures: "f.json" }, undefined, {})).toBe(" --local");
  });

  it("after apply --plan of a saved plan of another stack with --api-url: the API and the plan's stack", async () => {
    const cwd = folder({ "m/web.yaml": wbYaml("web", { [HR1]: 100, [HR2]: 0 }) });
    const s: Situation = { cwd, env: { EDGEPLAN_API_KEY: server.apiKey }, tty: false };
    const url = ["--api-url", server.url];
    expect((await run(["apply", "m", ...url, "--stack", "saved", "--auto-approve"], s)).code).toBe(0);
    writeFileSync(join(cwd, "m", "web.yaml"), PAUSING);
    expect((await run(["apply", "m", ...url, "--stack", "saved", "--auto-approve"], s)).code).toBe(4);
    expect((await run(["plan", "m", ...url, "--stack", "saved", "--out", "p.json"], s)).code).toBe(0);
    const promote = `edgeplan rollout promote web --api-url ${server.url} --stack saved`;
    expect(await hintsOf(["apply", "--plan", "p.json", ...url, "--auto-approve"], s, 4)).toEqual([promote]);
    await runLines([promote], s);
    // The saved plan itself names no flag: it does not depend on how it was made.
    expect(readFileSync(join(cwd, "p.json"), "utf8")).toContain('run \\"edgeplan rollout promote web\\" to go on');
  });
});

describe("a saved rollout step", () => {
  it("says at plan time until when it can be applied; applied later, it is a stale plan (exit 1) with the command to plan again", async () => {
    const cwd = folder({ "m/api.yaml": wbYaml("api", { [HR1]: 100, [HR2]: 0 }) });
    const s: Situation = { cwd, env: { EDGEPLAN_API_KEY: server.apiKey, EDGEPLAN_API_URL: server.url }, tty: false };
    expect((await run(["apply", "m", "--stack", "roll", "--auto-approve"], s)).code).toBe(0);
    writeFileSync(join(cwd, "m", "api.yaml"), `${wbYaml("api", { [HR1]: 0, [HR2]: 100 })}rollout:\n  max_step: 25\n  interval: 1s\n`);
    // Planned 6 s ago (a step's grace is 5 s at least): the API's time now is past it, with no wait.
    const now = Date.now() - 6000;
    const at = (ms: number): string => new Date(ms).toISOString().slice(11, 19);
    const io = captureIO(s.env, cwd);
    expect((await runPlan({ paths: ["m"], stack: "roll", out: "r.json", now }, io)).exitCode).toBe(0);
    expect(io.err).toBe(
      `plan saved to r.json; it holds rollout step 1 of 4 of weighted_backend.api, to apply before ${at(now + 5000)} UTC (in 5s); apply it with: edgeplan apply --plan r.json\n`,
    );
    const late = await run(["apply", "m", "--plan", "r.json", "--auto-approve"], s);
    expect(late.code, late.text).toBe(1);
    expect(late.text).toMatch(
      new RegExp(
        '^the saved plan is for stack "roll"; it is applied to that stack \\(not "default"\\)\\n' +
          "edgeplan: the saved plan r\\.json is stale: it can no longer be applied as it was made:\\n" +
          `  weighted_backend\\.api: rollout step 1 of 4 was to be applied before ${at(now + 5000)} UTC, 5s after the plan was made \\(it is \\d\\d:\\d\\d:\\d\\d UTC\\): ` +
          "written now, the next step would come early\\n" +
          "No change was sent\\. Plan again with: edgeplan plan m --stack roll --out r\\.json; or pass --refresh to plan again from the manifests and apply that\\.\\n$",
      ),
    );
    const live = (await apiClient(server.url, server.apiKey).get("/backends/weighted")).json as { backends: Array<{ backends: Array<{ id: string; weight: number }> }> };
    expect(JSON.stringify(live)).not.toContain('"weight":7500');
    const again = await run(["plan", "m", "--stack", "roll", "--out", "r.json"], s);
    expect(again.code, again.text).toBe(0);
    const applied = await run(["apply", "--plan", "r.json", "--auto-approve"], s);
    expect(applied.code, applied.text).toBe(0);
    expect(applied.text).toContain("rollout step 1 of 4 written");
  });
});
