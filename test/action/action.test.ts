/**
 * The action's adapter logic with plan and apply injected: what reaches the log, the pull request, the summary and
 * the outputs for each kind of result. Each run gets the process environment of a step. The end-to-end file runs the
 * bundle against the real commands and server.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  runAction as run,
  type ActionOptions,
  type ActionOutcome,
  type ActionRunners,
  type ApplyRunOptions,
  type PlanRunOptions,
  type RunResult,
} from "../../src/action/run.js";
import { projectDefaults } from "../../src/commands/action.js";
import type { CommandIO } from "../../src/commands/io.js";
import { ManifestError } from "../../src/model/errors.js";
import { reviewedMarker } from "../../src/render/action.js";
import { runnerEnv, type RunnerOptions } from "./env.js";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";

const CANARY = "ep_canary_Zq8vR2mWx7Lk4Tn9";
const TOKEN = "ghs_canaryToken_Pp3Yd6Hs1Qa0";
let gh: GitHubStandIn;
/**
 * The job summary of every run here: the toolkit finds the summary file once per process (one run of the action
 * is one process), so the runs of this file share one, emptied before each test.
 */
const SUMMARY = join(mkdtempSync(join(tmpdir(), "edgeplan-summary-")), "summary");

beforeAll(async () => {
  gh = await startGitHubStandIn(TOKEN);
});
afterAll(async () => {
  await gh.close();
});
beforeEach(() => {
  writeFileSync(SUMMARY, "");
  gh.calls.length = 0;
  gh.comments.clear();
  gh.issues.clear();
  gh.pulls.clear();
  gh.permissions.clear();
  gh.readOnly = false;
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

type TestIO = CommandIO & { out: string; err: string };

/**
 * One run of the action as the runner starts it: the step's environment (nothing of this process's GITHUB_, INPUT_
 * or RUNNER_ variables), and the log (stdout, where the toolkit writes too) recorded in `io.out`.
 */
async function runAction(io: TestIO, fake: ActionRunners, options: ActionOptions = {}): Promise<ActionOutcome> {
  for (const name of Object.keys(process.env)) if (/^(GITHUB_|INPUT_|RUNNER_|EDGEPLAN_)/.test(name)) vi.stubEnv(name, undefined);
  for (const [name, value] of Object.entries(io.env)) vi.stubEnv(name, value);
  const write = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    io.out += String(chunk);
    return true;
  });
  try {
    return await run(io, fake, options);
  } finally {
    write.mockRestore();
  }
}

interface Recorded {
  plan: { options: PlanRunOptions; env: Record<string, string | undefined> }[];
  apply: { options: ApplyRunOptions; env: Record<string, string | undefined> }[];
}

/** Runners that behave like the commands: print, save the plan file, and (badly) echo the key to stderr. */
function runners(result: Partial<RunResult> | Error, recorded: Recorded = { plan: [], apply: [] }): ActionRunners & { recorded: Recorded } {
  const respond = async (io: CommandIO, out?: string): Promise<RunResult> => {
    io.stderr(`debug: Authorization: Bearer ${io.env.EDGEPLAN_API_KEY}\n`);
    if (result instanceof Error) throw result;
    io.stdout("Plan: 1 to create, 0 to update, 0 to delete.\n");
    if (out) writeFileSync(out, JSON.stringify({ format_version: 1 }));
    return { exitCode: 0, diagnostics: [], ...result };
  };
  return {
    recorded,
    plan: async (options, io) => {
      recorded.plan.push({ options, env: { ...io.env } });
      return respond(io, options.out);
    },
    apply: async (options, io) => {
      recorded.apply.push({ options, env: { ...io.env } });
      return respond(io);
    },
  };
}

function setup(overrides: Partial<RunnerOptions> & { inputs?: Record<string, string> } = {}) {
  writeFileSync(SUMMARY, "");
  const runner = runnerEnv({
    event: "pull_request",
    githubApiUrl: gh.url,
    pr: { number: 7, headSha: "a1b2c3d4e5f6" },
    summaryFile: SUMMARY,
    ...overrides,
    inputs: { "api-key": CANARY, "github-token": TOKEN, stack: "prod", paths: "manifests", ...overrides.inputs },
  });
  const io: TestIO = {
    out: "",
    err: "",
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => {
      io.err += text;
    },
    env: { ...runner.env },
    cwd: runner.workspace,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
  return { runner, io };
}

const PLAN_MD =
  "### edgeplan plan: stack `prod`\n\n**Plan: 1 to create, 0 to update, 0 to delete.**\n\n| change | address |\n|---|---|\n| create | `weighted_backend.checkout` |\n";

/** Everything the action wrote where a person or a later step can read it. */
function everything(io: { out: string; err: string }, runner: ReturnType<typeof runnerEnv>): string {
  const stdout = io.out
    .split("\n")
    .filter((line) => !line.startsWith("::add-mask::"))
    .join("\n");
  const sent = gh.calls.map((c) => JSON.stringify(c.body ?? "")).join("\n");
  const stored = [...gh.comments.values()]
    .flat()
    .map((c) => c.body)
    .join("\n");
  return [stdout, io.err, sent, stored, runner.summary(), JSON.stringify(runner.outputs())].join("\n");
}

describe("edgeplan action on a pull request", () => {
  it("plans, comments, writes the summary and outputs, and succeeds with changes", async () => {
    const { runner, io } = setup();
    const fake = runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true, summary: "Plan: 1 to create, 0 to update, 0 to delete." });
    const outcome = await runAction(io, fake);

    expect(outcome.exitCode).toBe(0);
    expect(outcome.comment).toBe("created");
    const planFile = join(runner.dir, "temp", "edgeplan-plan-prod.json");
    expect(runner.outputs()).toEqual({
      "has-changes": "true",
      exitcode: "2",
      "plan-file": planFile,
      summary: "Plan: 1 to create, 0 to update, 0 to delete.",
    });
    expect(fake.recorded.plan).toHaveLength(1);
    expect(fake.recorded.plan[0]!.options).toEqual({
      paths: ["manifests"],
      stack: "prod",
      apiKeyEnv: "EDGEPLAN_API_KEY",
      prune: false,
      format: "text",
      color: false,
      out: planFile,
      detailedExitcode: true,
    });
    const childEnv = fake.recorded.plan[0]!.env;
    expect(childEnv.EDGEPLAN_API_KEY).toBe(CANARY);
    expect(childEnv.EDGEPLAN_STACK).toBe("prod");
    expect(Object.keys(childEnv).filter((k) => k.startsWith("INPUT_"))).toEqual([]);

    expect(runner.summary()).toBe(`${PLAN_MD.trim()}\n\n`);
    const comments = gh.comments.get("acme/routes#7")!;
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toBe(
      "<!-- edgeplan:plan stack=prod -->\n" + PLAN_MD.trim() + "\n\n<sub>Commit a1b2c3d · [workflow run](https://github.com/acme/routes/actions/runs/4242)</sub>\n",
    );
    // Masks first, then the log; the command's output sits between stop and resume lines.
    const lines = io.out.split("\n");
    expect(lines.slice(0, 2)).toEqual([`::add-mask::${CANARY}`, `::add-mask::${TOKEN}`]);
    expect(lines[2]).toBe("::group::edgeplan plan");
    expect(lines[3]).toMatch(/^::stop-commands::edgeplan-[0-9a-f-]{36}$/);
    const token = lines[3]!.slice("::stop-commands::".length);
    expect(lines.slice(4, 7)).toEqual(["Plan: 1 to create, 0 to update, 0 to delete.", `::${token}::`, "::endgroup::"]);
    expect(io.out).toContain("::notice title=edgeplan::Plan: 1 to create, 0 to update, 0 to delete.\n");
    expect(everything(io, runner)).not.toContain(CANARY);
    expect(everything(io, runner)).not.toContain(TOKEN);
    expect(io.err).toContain("debug: Authorization: Bearer ***\n");
  });

  it("keeps ONE comment across two runs, edited in place", async () => {
    gh.seed("acme/routes#7", 130);
    const first = setup();
    await runAction(first.io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true }));
    const second = setup({ pr: { number: 7, headSha: "ffff000011112222" } });
    const outcome = await runAction(second.io, runners({ exitCode: 0, markdown: "No changes.\n", hasChanges: false }));
    expect(outcome.comment).toBe("updated");

    const mine = gh.comments.get("acme/routes#7")!.filter((c) => c.body.includes("edgeplan:plan"));
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body).toContain("\n\nNo changes.\n\n<sub>Commit ffff000 · ");
    const writes = gh.writes().map((c) => `${c.method} ${c.path}`);
    expect(writes).toEqual(["POST /repos/acme/routes/issues/7/comments", `PATCH /repos/acme/routes/issues/comments/${mine[0]!.id}`]);
    // The second run had to read past the first page to find it.
    expect(gh.calls.filter((c) => c.method === "GET").map((c) => c.query.page ?? "1")).toEqual(["1", "2", "1", "2"]);
    expect(second.runner.outputs()["has-changes"]).toBe("false");
    expect(second.runner.outputs().exitcode).toBe("0");
  });

  it("keeps one comment per stack", async () => {
    await runAction(setup().io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true }));
    await runAction(setup({ inputs: { stack: "staging" } }).io, runners({ exitCode: 0, markdown: "No changes.\n" }));
    await runAction(setup().io, runners({ exitCode: 0, markdown: "No changes.\n" }));
    const bodies = gh.comments.get("acme/routes#7")!.map((c) => c.body.split("\n")[0]);
    expect(bodies).toEqual(["<!-- edgeplan:plan stack=prod -->", "<!-- edgeplan:plan stack=staging -->"]);
    expect(gh.writes().map((c) => c.method)).toEqual(["POST", "POST", "PATCH"]);
  });

  it("keeps one comment per environment: the environment input reaches --env, the marker, the heading and the summary", async () => {
    const project = "environments:\n  staging:\n    stack: web-staging\n    vars: {edge: e}\n  production:\n    stack: web-production\n    vars: {edge: e}\n";
    const runIn = async (environment: string, markdown: string) => {
      const { runner, io } = setup({ inputs: { stack: "", environment } });
      writeFileSync(join(runner.workspace, "edgeplan.yaml"), project);
      const fake = runners({ exitCode: 2, markdown, hasChanges: true });
      await runAction(io, fake, { defaults: await projectDefaults(io) });
      return { runner, io, fake };
    };
    const staging = await runIn("staging", "**Plan: 1 to create, 0 to update, 0 to delete.**\n");
    expect(staging.fake.recorded.plan[0]!.options).toMatchObject({ env: "staging", stack: "web-staging", apiKeyEnv: "EDGEPLAN_API_KEY" });
    expect(staging.fake.recorded.plan[0]!.options.out).toBe(join(staging.runner.dir, "temp", "edgeplan-plan-staging-web-staging.json"));
    expect(staging.io.err).toContain('edgeplan action: plan of stack "web-staging" in environment staging for pull request #7');
    expect(staging.runner.summary()).toBe("### edgeplan plan: environment `staging`, stack `web-staging`\n\n**Plan: 1 to create, 0 to update, 0 to delete.**\n\n");
    await runIn("production", "**Plan: 2 to create, 0 to update, 0 to delete.**\n");
    await runIn("staging", "**Plan: 3 to create, 0 to update, 0 to delete.**\n");

    const comments = gh.comments.get("acme/routes#7")!;
    expect(comments.map((c) => c.body.split("\n").slice(0, 3))).toEqual([
      ["<!-- edgeplan:plan stack=web-staging env=staging -->", "### edgeplan plan: environment `staging`, stack `web-staging`", ""],
      ["<!-- edgeplan:plan stack=web-production env=production -->", "### edgeplan plan: environment `production`, stack `web-production`", ""],
    ]);
    expect(comments[0]!.body).toContain("**Plan: 3 to create");
    expect(comments[1]!.body).toContain("**Plan: 2 to create");
    expect(gh.writes().map((c) => c.method)).toEqual(["POST", "POST", "PATCH"]);
  });

  it("annotates manifest errors at their lines and fails", async () => {
    const { runner, io } = setup();
    const ws = runner.workspace;
    const error = new ManifestError([
      // Relative to the working directory, as the manifest loader reports them.
      { severity: "error", pos: { file: "manifests/checkout.yaml", line: 7, col: 5 }, message: "weight 10001 for bkdhr_x is out of range 0 to 10000" },
      { severity: "warning", pos: { file: join(ws, "manifests/login.yaml"), line: 12, col: 3 }, message: "allow_idp_initiated left out: the API default true applies" },
      { severity: "error", pos: { file: join(ws, "manifests/a,b.yaml"), line: 1, col: 1 }, message: "unknown field: 50%\nsee docs" },
    ]);
    const outcome = await runAction(io, runners(error));
    expect(outcome.exitCode).toBe(1);
    const annotations = io.out.split("\n").filter((l) => /^::(error|warning) .*file=/.test(l));
    expect(annotations).toEqual([
      "::error title=edgeplan,file=manifests/checkout.yaml,line=7,col=5::weight 10001 for bkdhr_x is out of range 0 to 10000",
      "::warning title=edgeplan,file=manifests/login.yaml,line=12,col=3::allow_idp_initiated left out: the API default true applies",
      "::error title=edgeplan,file=manifests/a%2Cb.yaml,line=1,col=1::unknown field: 50%25%0Asee docs",
    ]);
    expect(runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "1", "plan-file": "", summary: "The plan of stack prod failed: 2 errors in the manifests." });
    const body = gh.comments.get("acme/routes#7")![0]!.body;
    expect(body).toContain("**The plan failed.**\n\n2 errors in the manifests; nothing was sent to the API:\n\n```text\n");
    expect(body).toContain("manifests/checkout.yaml:7:5: weight 10001 for bkdhr_x is out of range 0 to 10000\n");
    expect(runner.summary()).toContain("**The plan failed.**");
  });

  it("falls back to the summary with a notice when the token is read-only (a fork)", async () => {
    gh.readOnly = true;
    const { runner, io } = setup({ pr: { number: 9, headSha: "abcdef0123", fork: true } });
    const outcome = await runAction(io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true }));
    expect(outcome.exitCode).toBe(0);
    expect(outcome.comment).toBe("forbidden");
    expect(io.out).toContain(
      "::notice title=edgeplan::the plan could not be posted as a pull-request comment%3A the token is read-only (as it is for pull requests from forks); the plan is in the job summary\n".replace(
        "%3A",
        ":",
      ),
    );
    expect(io.out).not.toMatch(/^::(error|warning)/m);
    expect(runner.summary()).toContain(PLAN_MD.trim());
    expect(runner.outputs()).toMatchObject({ "has-changes": "true", exitcode: "2" });
    expect(gh.comments.get("acme/routes#9")).toBeUndefined();
  });

  it("reads the key from the variable an environment's api_key_env names when the api-key input is empty, never from EDGEPLAN_API_KEY", async () => {
    const project = "environments:\n  production:\n    stack: web\n    api_key_env: EDGEPLAN_API_KEY_PROD\n    vars: {edge: e}\n";
    const runWith = async (env: Record<string, string>) => {
      const { runner, io } = setup({ inputs: { stack: "", "api-key": "" } });
      writeFileSync(join(runner.workspace, "edgeplan.yaml"), project);
      Object.assign(io.env, env);
      const fake = runners({ exitCode: 0 });
      const outcome = await runAction(io, fake, { defaults: await projectDefaults(io) });
      return { io, fake, outcome };
    };
    const mapped = await runWith({ EDGEPLAN_API_KEY_PROD: CANARY, EDGEPLAN_API_KEY: "ep_other_environments_key_1" });
    expect(mapped.outcome.exitCode).toBe(0);
    expect(mapped.fake.recorded.plan[0]!.env.EDGEPLAN_API_KEY).toBe(CANARY);
    // The key is masked in the log as the input's would be.
    expect(mapped.io.out).toContain(`::add-mask::${CANARY}\n`);

    const unset = await runWith({ EDGEPLAN_API_KEY: "ep_other_environments_key_1" });
    expect(unset.outcome.exitCode).toBe(1);
    expect(unset.fake.recorded.plan).toHaveLength(0);
    expect(unset.io.out).toContain(
      "::error title=edgeplan::no API key: EDGEPLAN_API_KEY_PROD (the project file's api_key_env) is not set: map it from a secret in the step's env " +
        "(env: EDGEPLAN_API_KEY_PROD: ${{ secrets.EDGEPLAN_API_KEY_PROD }}), or set the action's api-key input\n",
    );
  });

  it("fails with a hint when a fork's run has no API key", async () => {
    const { runner, io } = setup({ pr: { number: 9, headSha: "abc", fork: true }, inputs: { "api-key": "" } });
    const fake = runners({ exitCode: 0 });
    const outcome = await runAction(io, fake);
    expect(outcome.exitCode).toBe(1);
    expect(fake.recorded.plan).toHaveLength(0);
    expect(io.out).toContain(
      "::error title=edgeplan::no API key: set the action's api-key input from a secret (api-key: ${{ secrets.EDGEPLAN_API_KEY }}); this pull request comes from a fork, and GitHub gives no secrets to workflows of forks\n",
    );
    expect(runner.outputs().exitcode).toBe("1");
  });

  it("cuts a long plan to the comment limit and keeps it whole in the summary", async () => {
    const { runner, io } = setup();
    const long = PLAN_MD + Array.from({ length: 400 }, (_, i) => `<details><summary>change ${i}</summary>\n\n\`\`\`diff\n+ weight ${i}\n\`\`\`\n\n</details>\n`).join("\n");
    await runAction(io, runners({ exitCode: 2, markdown: long, hasChanges: true }), { commentMaxChars: 3000 });
    const body = gh.comments.get("acme/routes#7")![0]!.body;
    expect(body.length).toBeLessThanOrEqual(3000);
    expect(body).toContain(PLAN_MD.trim());
    expect(body).toContain("The plan was cut to fit in a comment; the full plan is in the job summary of [this run](https://github.com/acme/routes/actions/runs/4242).");
    expect(body.match(/<details>/g)!.length).toBe(body.match(/<\/details>/g)!.length);
    expect(runner.summary()).toContain("<summary>change 399</summary>");
  });

  it("writes no comment when the comment input is false", async () => {
    const { runner, io } = setup({ inputs: { comment: "false" } });
    const outcome = await runAction(io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true }));
    expect(outcome.comment).toBe("skipped");
    expect(gh.calls).toHaveLength(0);
    expect(runner.summary()).toContain(PLAN_MD.trim());
  });

  it("fails on a wrong input, after masking", async () => {
    const { runner, io } = setup({ inputs: { prune: "maybe" } });
    const outcome = await runAction(io, runners({ exitCode: 0 }));
    expect(outcome.exitCode).toBe(1);
    expect(io.out).toBe(`::add-mask::${CANARY}\n::add-mask::${TOKEN}\n::error title=edgeplan::input prune: "maybe" is not a boolean; use true or false\n`);
    expect(runner.outputs()).toEqual({
      "has-changes": "false",
      exitcode: "1",
      "plan-file": "",
      summary: 'edgeplan could not start: input prune: "maybe" is not a boolean; use true or false',
    });
  });

  it("reports an API error as a failure without the key", async () => {
    const { runner, io } = setup();
    const { ApiError } = await import("../../src/model/errors.js");
    const err = new ApiError("GET", "/backends/weighted", 401, "ERR_NGROK_203", `unknown key ${CANARY}`, "op_1");
    const outcome = await runAction(io, runners(err));
    expect(outcome.exitCode).toBe(1);
    expect(io.out).toContain("::error title=edgeplan::GET /backends/weighted%3A 401 ERR_NGROK_203%3A unknown key ***".replace(/%3A/g, ":"));
    expect(everything(io, runner)).not.toContain(CANARY);
    expect(gh.comments.get("acme/routes#7")![0]!.body).toContain("**The plan failed.**");
  });
});

describe("edgeplan action on push", () => {
  it("applies with auto-approve and the acknowledged risks, and summarises", async () => {
    const { runner, io } = setup({ event: "push", ref: "refs/heads/main", inputs: { ack: "traffic-shift\nmass-delete", prune: "true" } });
    delete (io.env as Record<string, string | undefined>)["INPUT_GITHUB-TOKEN"];
    const fake = runners({ exitCode: 0, markdown: "Applied 1 change. Converged.\n", hasChanges: true });
    const outcome = await runAction(io, fake);
    expect(outcome.exitCode).toBe(0);
    expect(outcome.command).toBe("apply");
    expect(fake.recorded.apply[0]!.options).toEqual({
      paths: ["manifests"],
      stack: "prod",
      apiKeyEnv: "EDGEPLAN_API_KEY",
      prune: true,
      ack: ["traffic-shift", "mass-delete"],
      autoApprove: true,
      color: false,
    });
    expect(gh.calls).toHaveLength(0);
    expect(runner.summary()).toBe("### edgeplan apply: stack `prod`\n\nApplied 1 change. Converged.\n\n");
    expect(runner.outputs()).toEqual({ "has-changes": "true", exitcode: "0", "plan-file": "", summary: "The apply of stack prod converged." });
  });

  it("on a merge: the apply is limited to the reviewed addresses, takes the pull request's acknowledgements and the wait inputs, and posts its result", async () => {
    const sha = "5a5a5a5a5a5a";
    gh.pulls.set(sha, [{ number: 9, merged_at: "2026-11-25T13:10:00Z", merge_commit_sha: sha, base: { ref: "main" }, head: { sha: "9e9e9e9e9e9e" } }]);
    // GitHub answers `write` for the maintain role.
    gh.permissions.set("alice", "write");
    const binding = { head: "9e9e9e9e9e9e", after: 77, entries: [] };
    const reviewed = reviewedMarker({ digest: "a".repeat(64), changes: { "weighted_backend.checkout": "0123456789abcdef" } }, ["traffic-shift"], binding);
    gh.comments.set("acme/routes#9", [{ id: 77, body: `<!-- edgeplan:plan stack=prod -->\n${reviewed}\n\nplan`, user: { login: "github-actions[bot]", type: "Bot" } }]);
    gh.comment("acme/routes#9", "alice", "/edgeplan ack traffic-shift");
    const { io } = setup({
      event: "push",
      ref: "refs/heads/main",
      pr: undefined,
      sha,
      inputs: { command: "apply", wait: "true", "wait-timeout": "50m", "lock-timeout": "30m" },
    });
    const fake = runners({ exitCode: 0, markdown: "**Apply complete: 1 done.**\n", hasChanges: true });
    const outcome = await runAction(io, fake);
    expect(outcome.exitCode).toBe(0);
    const { review, ...options } = fake.recorded.apply[0]!.options;
    expect(options).toEqual({
      paths: ["manifests"],
      stack: "prod",
      apiKeyEnv: "EDGEPLAN_API_KEY",
      prune: false,
      ack: ["traffic-shift"],
      autoApprove: true,
      color: false,
      target: ["weighted_backend.checkout"],
      wait: true,
      waitTimeout: "50m",
      lockTimeout: "30m",
    });
    expect(typeof review).toBe("function");
    const body = gh.comments.get("acme/routes#9")!.find((c) => c.id === 77)!.body;
    expect(body.startsWith(`<!-- edgeplan:plan stack=prod -->\n${reviewed}\n<!-- edgeplan:acks -->\n`)).toBe(true);
    expect(body).toContain(
      "\n\n### edgeplan apply: stack `prod`\n\n**Apply complete: 1 done.**\n\n<sub>Merged as 5a5a5a5 · [workflow run](https://github.com/acme/routes/actions/runs/4242)</sub>\n",
    );
    expect(gh.writes().map((c) => `${c.method} ${c.path}`)).toEqual(["PATCH /repos/acme/routes/issues/comments/77"]);
  });

  it("fails the step when the apply is refused or partly failed", async () => {
    const { UnsafePlanError } = await import("../../src/model/errors.js");
    const refused = setup({ event: "push", ref: "refs/heads/main" });
    const refusal = new UnsafePlanError("the plan has 2 risks: use --ack traffic-shift --ack mass-delete", "risk", ["traffic-shift", "mass-delete"]);
    const r1 = await runAction(refused.io, runners(refusal));
    expect(r1.exitCode).toBe(1);
    const hint = "In the action, name the rules in the ack input (for example `ack: traffic-shift, mass-delete`).";
    expect(refused.io.out).toContain(`::error title=edgeplan::the plan has 2 risks: use --ack traffic-shift --ack mass-delete%0A${hint}\n`);
    expect(refused.runner.summary()).toContain(`**The apply failed.**\n\n\`\`\`text\nthe plan has 2 risks: use --ack traffic-shift --ack mass-delete\n${hint}\n\`\`\``);

    // A refusal for another reason (no terminal) has no ack hint, whatever its message says.
    const other = setup({ event: "push", ref: "refs/heads/main" });
    await runAction(other.io, runners(new UnsafePlanError("needs approval; pass --ack nothing", "no-terminal")));
    expect(other.io.out).toContain("::error title=edgeplan::needs approval; pass --ack nothing\n");

    const shown = setup({ event: "push", ref: "refs/heads/main" });
    const risky = "#### Risks\n\n- `traffic-shift` weighted_backend.checkout: 90% of traffic moves\n";
    const r3 = await runAction(shown.io, runners({ exitCode: 1, markdown: risky, hasChanges: true }));
    expect(r3.exitCode).toBe(1);
    expect(shown.runner.summary()).toBe("### edgeplan apply: stack `prod`\n\n**The apply failed.**\n\n```text\ndebug: Authorization: Bearer ***\n```\n\n" + risky + "\n");
    expect(shown.runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "1" });

    const partial = setup({ event: "push", ref: "refs/heads/main" });
    const r2 = await runAction(partial.io, runners({ exitCode: 3, markdown: "1 change failed.\n", hasChanges: true }));
    expect(r2.exitCode).toBe(3);
    expect(partial.runner.outputs()).toMatchObject({ exitcode: "3", summary: "The apply of stack prod finished with some changes failed." });
  });

  it("plans, not applies, on a push to another branch", async () => {
    const { io } = setup({ event: "push", ref: "refs/heads/feature" });
    const fake = runners({ exitCode: 0 });
    const outcome = await runAction(io, fake);
    expect(outcome.command).toBe("plan");
    expect(fake.recorded.apply).toHaveLength(0);
    expect(fake.recorded.plan).toHaveLength(1);
  });
});

describe("edgeplan action as a drift check", () => {
  const schedule = (inputs: Record<string, string> = {}) => setup({ event: "schedule", pr: undefined, inputs: { "drift-issue": "true", ...inputs } });

  it("opens the stack's drift issue and fails on drift, comments while it lasts, closes it when it is gone", async () => {
    const first = schedule();
    const drifted = await runAction(first.io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true, summary: "Plan: 1 to create, 0 to update, 0 to delete." }));
    expect(drifted.exitCode).toBe(2);
    expect(drifted.drift).toEqual({ found: true, issue: "opened", number: 500 });
    expect(first.io.out).toContain("::error title=edgeplan drift::drift in stack prod: Plan: 1 to create, 0 to update, 0 to delete.\n");
    expect(first.runner.outputs()).toMatchObject({ "has-changes": "true", exitcode: "2" });
    const [issue] = gh.issues.get("acme/routes")!;
    expect(issue).toMatchObject({ number: 500, title: "edgeplan: drift in stack prod", labels: [{ name: "edgeplan-drift" }], state: "open" });
    expect(issue!.body).toBe(
      "<!-- edgeplan:drift stack=prod -->\nLive state of stack `prod` differs from the manifests. Found by [this run](https://github.com/acme/routes/actions/runs/4242): " +
        "Plan: 1 to create, 0 to update, 0 to delete.\n\nApply the manifests again, or change them to match what live holds. This issue is closed by the first " +
        `drift check that finds no changes.\n\n<details><summary>The plan</summary>\n\n${PLAN_MD.trim()}\n\n</details>\n`,
    );

    const again = await runAction(schedule().io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true }));
    expect(again.drift).toEqual({ found: true, issue: "commented", number: 500 });
    const clean = schedule();
    const gone = await runAction(clean.io, runners({ exitCode: 0, markdown: "No changes.\n", hasChanges: false }));
    expect(gone.exitCode).toBe(0);
    expect(gone.drift).toEqual({ found: false, issue: "closed", number: 500 });
    expect(gh.issues.get("acme/routes")!.map((i) => i.state)).toEqual(["closed"]);
    expect(gh.comments.get("acme/routes#500")!.map((c) => c.body.split("\n")[0])).toEqual([
      "Live state of stack `prod` differs from the manifests. Found by [this run](https://github.com/acme/routes/actions/runs/4242): The plan of stack prod has changes.",
      "Live state of stack `prod` matches the manifests again ([drift check](https://github.com/acme/routes/actions/runs/4242)). Closing.",
    ]);
    expect(everything(clean.io, clean.runner)).not.toContain(CANARY);
  });

  it("still fails on drift when the token may not write issues, and leaves pull requests alone", async () => {
    gh.readOnly = true;
    const ro = schedule();
    const outcome = await runAction(ro.io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true }));
    expect(outcome.exitCode).toBe(2);
    expect(outcome.drift).toEqual({ found: true, issue: "forbidden" });
    expect(ro.io.out).toContain("::notice title=edgeplan::the plan could not be posted as the drift issue: the token is read-only");
    gh.readOnly = false;

    // A plan that failed says nothing about drift: no issue is opened or closed.
    gh.calls.length = 0;
    const failed = await runAction(schedule().io, runners(new Error("the API is down")));
    expect(failed.exitCode).toBe(1);
    expect(failed.drift).toBeUndefined();
    expect(gh.writes()).toHaveLength(0);

    const pr = setup({ inputs: { "drift-issue": "true" } });
    const planned = await runAction(pr.io, runners({ exitCode: 2, markdown: PLAN_MD, hasChanges: true }));
    expect(planned.exitCode).toBe(0);
    expect(planned.drift).toBeUndefined();
    expect(gh.issues.size).toBe(0);
  });
});
