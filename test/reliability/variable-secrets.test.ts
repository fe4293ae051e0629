/**
 * `${EDGEPLAN_VAR_*}` values are secrets. A canary given as EDGEPLAN_VAR_STATUS_TOKEN, sent by a rollout's check (in
 * its URL's query) and by a web metric (in its URL and an Authorization header), reaches the status server and
 * nothing else: no plan in any format, saved plan, HTML page, report, error message, live object, pull-request
 * comment, job summary, annotation or log. A manifest that would write or show it is refused at its place. And an
 * API URL from a flag, a variable or the Action's input that is not the chosen environment's is refused.
 * In process, against the real server; the commands print through an IO without a redactor, so that what is
 * checked is what they print, not what a sink hides.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { runAction } from "../../src/action/run.js";
import { actionRunners, projectDefaults } from "../../src/commands/action.js";
import { runApply } from "../../src/commands/apply.js";
import { captureIO, type CommandIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { loadManifests } from "../../src/commands/session.js";
import { runnerEnv } from "../action/env.js";
import { FIXTURES, HR1, HR2 } from "../apply/e2e.js";
import { apiClient, startTestServer, type TestServer } from "../helpers/server.js";
import { canary, tempDir } from "./cli.js";

const TOKEN = canary();
const VAR = "EDGEPLAN_VAR_STATUS_TOKEN";
const GH_TOKEN = `ghs_${canary()}`;

/** An IO that records what the command prints, as it prints it (no redactor). */
function rawIO(env: Record<string, string>, cwd: string): CommandIO & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    stdout(text: string) {
      io.out += text;
    },
    stderr(text: string) {
      io.err += text;
    },
    env,
    cwd,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
  return io;
}

/** A status server: a check at /healthy (answering `check.code`) and a metric at /metric; it records what it was sent. */
async function startStatus(): Promise<{ url: string; check: { code: number }; seen: Array<{ url: string; headers: IncomingHttpHeaders }>; close(): Promise<void> }> {
  const check = { code: 200 };
  const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const server: Server = createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    const metric = (req.url ?? "").startsWith("/metric");
    res.writeHead(metric ? 200 : check.code, { "content-type": "application/json" });
    res.end(metric ? JSON.stringify({ healthy: true }) : "{}");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, check, seen, close: () => new Promise((r) => server.close(() => r())) };
}

let server: TestServer;
let status: Awaited<ReturnType<typeof startStatus>>;
let gh: GitHubStandIn;
const dirs: Array<{ remove(): void }> = [];
const fresh = (prefix: string): string => {
  const d = tempDir(prefix);
  dirs.push(d);
  return d.path;
};

beforeAll(async () => {
  [server, status, gh] = await Promise.all([startTestServer({ fixtures: FIXTURES }), startStatus(), startGitHubStandIn(GH_TOKEN)]);
});
afterAll(async () => {
  await Promise.all([server?.close(), status?.close(), gh?.close()]);
  for (const d of dirs) d.remove();
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** Writes `m/wb.yaml` in `dir`. */
function manifest(dir: string, text: string): void {
  mkdirSync(join(dir, "m"), { recursive: true });
  writeFileSync(join(dir, "m", "wb.yaml"), text);
}

/** A weighted backend `web` with these weights, and a rollout whose check and metric carry the token. */
function rolloutManifest(weights: [number, number]): string {
  return [
    "kind: WeightedBackend",
    "name: web",
    `backends: {${HR1}: ${weights[0]}, ${HR2}: ${weights[1]}}`,
    "rollout:",
    "  max_step: 50",
    "  interval: 1s",
    `  check: {url: "${status.url}/healthy?token=\${${VAR}}"}`,
    "  analysis:",
    "    - name: health",
    `      web: {url: "${status.url}/metric?token=\${${VAR}}", json_path: "$.healthy", headers: {Authorization: "Bearer \${${VAR}}"}}`,
    "      success: 'result == true'",
    "",
  ].join("\n");
}

/** Fails naming where the token was found. */
function expectNoToken(outputs: Array<{ label: string; text: string }>): void {
  for (const { label, text } of outputs) {
    const at = text.indexOf(TOKEN);
    if (at >= 0) expect.fail(`${label} holds the token: ...${text.slice(Math.max(0, at - 160), at + TOKEN.length + 20)}...`);
  }
}

/** Every weighted backend the server holds, as the API answers them. */
async function liveObjects(): Promise<string> {
  const res = await apiClient(server.url, server.apiKey).get("/backends/weighted?limit=100");
  expect(res.status).toBe(200);
  return res.text;
}

describe("EDGEPLAN_VAR_* values are sent, never shown or written", () => {
  const env = (): Record<string, string> => ({ EDGEPLAN_API_KEY: server.apiKey, [VAR]: TOKEN });
  const flags = (dir: string) => ({ paths: [join(dir, "m")], apiUrl: server.url, stack: "secrets", rateLimit: "off" });

  it("a manifest that would write or show one is refused at its place, naming the variable, never its value", async () => {
    const dir = fresh("var-shown");
    manifest(dir, `kind: WeightedBackend\nname: web\ndescription: "status \${${VAR}}"\nbackends: {${HR1}: 1}\n`);
    const io = rawIO(env(), dir);
    const err = await runPlan({ ...flags(dir), paths: ["m"] }, io).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(io.err).toBe(
      `m/wb.yaml:3:14: \${${VAR}}: description is written to the API or shown, and EDGEPLAN_VAR_* values are secrets, sent only in ` +
        "rollout.check.url, rollout.analysis[].web.url and web.headers values; for a value that is not secret, use ${var.NAME} from the environment's vars " +
        "(environments.NAME.vars in edgeplan.yaml)\n",
    );
    expectNoToken([
      { label: "stderr", text: io.err },
      { label: "stdout", text: io.out },
      { label: "error", text: String(err) },
    ]);
  });

  it("in a check's and a metric's URL and headers: every plan format, saved plan, report and live object holds the reference only", async () => {
    const dir = fresh("var-sent");
    const outputs: Array<{ label: string; text: string }> = [];
    const run = async <T extends { exitCode: number }>(label: string, go: (io: CommandIO) => Promise<T>): Promise<T> => {
      const io = rawIO(env(), dir);
      const result = await go(io);
      outputs.push({ label: `${label} stdout`, text: io.out }, { label: `${label} stderr`, text: io.err });
      return result;
    };
    manifest(dir, rolloutManifest([100, 0]));
    expect((await run("create", (io) => runApply({ ...flags(dir), autoApprove: true }, io))).exitCode).toBe(0);
    manifest(dir, rolloutManifest([0, 100]));
    for (const format of ["text", "json", "markdown", "html"] as const) await run(`plan ${format}`, (io) => runPlan({ ...flags(dir), format }, io));
    expect((await run("step 1", (io) => runApply({ ...flags(dir), autoApprove: true, format: "json" }, io))).exitCode).toBe(0);

    // Step 2 from a saved plan, once due: its check and its metric are asked with the token put in.
    await new Promise((r) => setTimeout(r, 1100));
    const files = { plan: join(dir, "plan.json"), html: join(dir, "plan.html") };
    await run("plan step 2", (io) => runPlan(flags(dir), io));
    await run("plan --out", (io) => runPlan({ ...flags(dir), format: "json", out: files.plan, html: files.html }, io));
    const saved = readFileSync(files.plan, "utf8");
    expect(saved).toContain(`/healthy?token=\${${VAR}}`);
    const step2 = await run("apply --plan", (io) => runApply({ ...flags(dir), plan: files.plan, autoApprove: true }, io));
    expect(step2.exitCode, outputs.at(-1)?.text).toBe(0);
    expect(status.seen.map((s) => s.url)).toEqual([`/healthy?token=${TOKEN}`, `/metric?token=${TOKEN}`]);
    expect(status.seen[1]?.headers.authorization).toBe(`Bearer ${TOKEN}`);

    // The last check fails: the rollout rolls back, and the halt is printed and kept in the live marker.
    status.check.code = 503;
    await new Promise((r) => setTimeout(r, 1100));
    const halted = await run("halt", (io) => runApply({ ...flags(dir), autoApprove: true }, io));
    expect(halted.exitCode).toBe(3);
    const live = await liveObjects();
    expect(live).toContain("halted");
    expectNoToken([...outputs, { label: "saved plan", text: saved }, { label: "HTML page", text: readFileSync(files.html, "utf8") }, { label: "live objects", text: live }]);
    // The plan shows where the check goes, its query hidden; the JSON hides the header's value too.
    const shown = (label: string): string => outputs.find((o) => o.label === label)?.text ?? "";
    expect(shown("plan step 2 stdout")).toContain(`check before this step: GET ${status.url}/healthy?***`);
    expect(shown("plan --out stdout")).toContain(`"url": "${status.url}/metric?***"`);
    expect(shown("plan --out stdout")).toContain('"Authorization": "(sensitive)"');
  }, 15_000);

  it("the sinks redact as the last line of defence: once the manifests send a variable, its value and the check's query are ***", async () => {
    const dir = fresh("var-sink");
    manifest(dir, rolloutManifest([100, 0]));
    const io = captureIO(env(), dir);
    await loadManifests(["m"], io, null);
    io.stderr(`token ${TOKEN}\n`);
    io.stdout(`GET ${status.url}/healthy?token=abc&x=1 failed; checkout=abc\n`);
    expect([io.err, io.out]).toEqual(["token ***\n", `GET ${status.url}/healthy?*** failed; checkout=abc\n`]);
  });
});

describe("the API URL of the chosen environment", () => {
  const project = (dir: string): void => {
    writeFileSync(
      join(dir, "edgeplan.yaml"),
      `paths: [m]\nenvironments:\n  staging:\n    api_url: ${server.url}\n    stack: staging\n  production:\n    api_url: https://api.example.com\n  dev:\n    stack: dev\n`,
    );
    manifest(dir, `kind: WeightedBackend\nname: plain\nbackends: {${HR1}: 1}\n`);
  };

  it("is refused when --api-url or EDGEPLAN_API_URL names another; the same URL, or an environment without api_url, is fine", async () => {
    const dir = fresh("api-url");
    project(dir);
    const env = { EDGEPLAN_API_KEY: server.apiKey };
    const refused = (given: string) =>
      `${given} https://api.example.com differs from the api_url of environment staging, ${server.url}; nothing was sent. ` +
      "The key, stack and policies are the environment's: make the two the same, or choose the environment of https://api.example.com with --env NAME";
    const before = server.logLines.length;
    await expect(runPlan({ paths: [], env: "staging", apiUrl: "https://api.example.com" }, rawIO(env, dir))).rejects.toThrow(refused("--api-url"));
    await expect(runPlan({ paths: [], env: "staging" }, rawIO({ ...env, EDGEPLAN_API_URL: "https://api.example.com/" }, dir))).rejects.toThrow(refused("EDGEPLAN_API_URL"));
    expect(server.logLines.length).toBe(before);
    expect((await runPlan({ paths: [], env: "staging" }, rawIO({ ...env, EDGEPLAN_API_URL: `${server.url}/` }, dir))).exitCode).toBe(0);
    expect((await runPlan({ paths: [], env: "dev", apiUrl: server.url, rateLimit: "off" }, rawIO(env, dir))).exitCode).toBe(0);
  });
});

describe("the GitHub Action", () => {
  /** One run of the action in this process, its log (stdout, where the toolkit writes) recorded. */
  async function action(workspace: string, number: number, inputs: Record<string, string>) {
    const runner = runnerEnv({
      event: "pull_request",
      githubApiUrl: gh.url,
      pr: { number, headSha: `abc${number}` },
      workspace,
      extraEnv: { [VAR]: TOKEN },
      inputs: { "api-key": server.apiKey, "github-token": GH_TOKEN, ...inputs },
    });
    for (const name of Object.keys(process.env)) if (/^(GITHUB_|INPUT_|RUNNER_|EDGEPLAN_)/.test(name)) vi.stubEnv(name, undefined);
    for (const [name, value] of Object.entries(runner.env)) vi.stubEnv(name, value);
    const io = rawIO(runner.env, workspace);
    const write = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      io.out += String(chunk);
      return true;
    });
    try {
      const outcome = await runAction(io, actionRunners(), { defaults: await projectDefaults(io) });
      const comments = (gh.comments.get(`acme/routes#${number}`) ?? []).map((c) => c.body).join("\n");
      return { outcome, io, comments, summary: runner.summary(), outputs: JSON.stringify(runner.outputs()) };
    } finally {
      write.mockRestore();
    }
  }

  it("comments, summarises, annotates and logs a refused manifest without the value; an api-url input that is not the environment's is refused", async () => {
    const workspace = fresh("var-action");
    manifest(workspace, `kind: WeightedBackend\nname: web\ndescription: "\${${VAR}}"\nbackends: {${HR1}: 1}\n`);
    const shown = await action(workspace, 7, { "api-url": server.url, paths: "m" });
    expect(shown.outcome.exitCode).toBe(1);
    expect(shown.comments).toContain(`\${${VAR}}: description is written to the API or shown`);
    expect(shown.io.out).toContain(`::error title=edgeplan,file=m/wb.yaml,line=3,col=14::\${${VAR}}: description`);

    writeFileSync(join(workspace, "edgeplan.yaml"), "paths: [m]\nenvironments:\n  production:\n    api_url: https://api.example.com\n");
    manifest(workspace, `kind: WeightedBackend\nname: web\nbackends: {${HR1}: 1}\n`);
    const other = await action(workspace, 8, { "api-url": server.url });
    expect(other.outcome.exitCode).toBe(1);
    expect(other.comments).toContain(
      `the action's api-url input ${server.url} differs from the api_url of environment production, https://api.example.com; nothing was sent.`,
    );
    expectNoToken(
      [shown, other].flatMap((r, i) => [
        // The runner is told to mask the value: the one line that may name it.
        { label: `log ${i}`, text: (r.io.out + r.io.err).replace(`::add-mask::${TOKEN}\n`, "") },
        { label: `comment ${i}`, text: r.comments },
        { label: `summary ${i}`, text: r.summary },
        { label: `outputs ${i}`, text: r.outputs },
      ]),
    );
  });
});
