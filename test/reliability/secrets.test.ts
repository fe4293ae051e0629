/**
 * Secret canary: every command runs with an API key `edgeplan-canary-<random>` (and a GitHub token of the same
 * kind), on its success paths and its error paths (401, 500 from a server that echoes every header back, network
 * failure, TLS to a plain-HTTP port, a next page on another origin, invalid manifests, a key file with a control
 * character), with `--verbose` where it exists. The canary must appear in no byte of stdout, stderr, the files
 * written (saved plan, exported manifests, job summary, step outputs), the pull-request comments, or the server's
 * request log. The only place it may appear is the action's `::add-mask::` line, which tells the runner to hide it.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, spawnServer, type SpawnedServer } from "../helpers/server.js";
import { runnerEnv } from "../action/env.js";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { canary, runEdgeplan, tempDir, type CliResult } from "./cli.js";

const KEY = canary();
const WRONG_KEY = canary();
const GH_TOKEN = `ghs_${canary()}`;
const SECRETS = [KEY, WRONG_KEY, GH_TOKEN];

const EDGE = "edghts_000000000000000000000000001";
const ROUTE = "edghtsrt_000000000000000000000000001";
const CHILD = "bkdhr_000000000000000000000000001";

const FIXTURES = `edges:
  - id: ${EDGE}
    routes:
      - {id: ${ROUTE}, match: /, match_type: path_prefix}
backends:
  - {id: ${CHILD}, type: http_response}
  - {id: bkdhr_000000000000000000000000002, type: http_response}
`;

/** Manifests that touch every kind: a weighted backend with a child by name, SAML from a file, a circuit breaker. */
function writeManifests(dir: string, weight = 100): void {
  mkdirSync(join(dir, "manifests", "idp"), { recursive: true });
  copyFileSync(join(REPO_ROOT, "examples", "saml", "idp", "okta.xml"), join(dir, "manifests", "idp", "okta.xml"));
  writeFileSync(
    join(dir, "manifests", "backends.yaml"),
    `kind: WeightedBackend\nname: checkout\ndescription: canary test\nmetadata: {team: payments}\nbackends:\n  ${CHILD}: ${weight}\n  checkout-canary: 10\n---\n` +
      `kind: WeightedBackend\nname: checkout-canary\nbackends:\n  bkdhr_000000000000000000000000002: 1\n`,
  );
  writeFileSync(
    join(dir, "manifests", "route.yaml"),
    `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml:\n  idp_metadata_file: idp/okta.xml\n  allow_idp_initiated: false\n  authorized_groups: [engineering]\n` +
      `circuit_breaker:\n  tripped_duration: 60\n  rolling_window: 60\n  num_buckets: 10\n  error_threshold_percentage: 0.5\n`,
  );
}

/** Every file under `dir`, as text. */
function filesUnder(dir: string): Array<{ label: string; text: string }> {
  const out: Array<{ label: string; text: string }> = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push({ label: `file ${p}`, text: readFileSync(p, "latin1") });
    }
  };
  walk(dir);
  return out;
}

/** Fails naming where a secret was found. `allowMask` drops the action's `::add-mask::<secret>` lines first. */
function expectNoSecret(outputs: Array<{ label: string; text: string }>, allowMask = false): void {
  for (const { label, text } of outputs) {
    const seen = allowMask
      ? text
          .split("\n")
          .filter((l) => !SECRETS.some((s) => l === `::add-mask::${s}`))
          .join("\n")
      : text;
    for (const secret of SECRETS) {
      const at = seen.indexOf(secret);
      if (at >= 0) expect.fail(`${label} holds a secret: ...${seen.slice(Math.max(0, at - 120), at + secret.length + 40)}...`);
    }
  }
}

const outputsOf = (label: string, r: CliResult): Array<{ label: string; text: string }> => [
  { label: `${label} stdout`, text: r.stdout },
  { label: `${label} stderr`, text: r.stderr },
];

/** A server that echoes the request's headers, key included, in every part of its answer a client might print. */
interface EchoServer {
  url: string;
  mode: "500" | "401" | "not-json" | "foreign-next-page" | "400-on-write";
  close(): Promise<void>;
}

const LEASE_ID = "bkdwd_000000000000000000000000001";

async function startEchoServer(): Promise<EchoServer> {
  const state: EchoServer = { url: "", mode: "500", close: async () => undefined };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const auth = String(req.headers.authorization ?? "");
      const echo = JSON.stringify(req.headers);
      const error = (status: number): void => {
        const body = JSON.stringify({
          error_code: `ERR_ECHO ${auth}`,
          status_code: status,
          msg: `you sent ${echo}`,
          details: { operation_id: auth, authorization: auth },
        });
        res.writeHead(status, { "content-type": "application/json", "ngrok-operation-id": auth, "retry-after": "0", "x-echo": auth });
        res.end(body);
      };
      const list = (next: string | null): void => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ backends: [], uri: `${state.url}/backends/weighted`, next_page_uri: next }));
      };
      const isList = req.method === "GET" && (req.url ?? "").startsWith("/backends/weighted");
      if (state.mode === "500") return error(500);
      if (state.mode === "401") return error(401);
      if (state.mode === "not-json") {
        res.writeHead(200, { "content-type": "text/plain" });
        return res.end(`not json; you sent ${echo}`);
      }
      if (state.mode === "foreign-next-page") {
        if (isList) return list(`http://evil.example/backends/weighted?key=${encodeURIComponent(auth)}`);
        return error(404);
      }
      // 400-on-write: reads show an empty account with the route and the children, writes are refused with the headers echoed; only
      // the apply's lease (docs/reliability.md, section 6) is taken and given back, so that its changes are sent.
      if (isList) return list(null);
      const lease = req.method === "POST" && req.url === "/backends/weighted" ? (JSON.parse(body) as { description: string; metadata: string }) : undefined;
      if (lease?.metadata.includes('"lease":{')) {
        res.writeHead(201, { "content-type": "application/json" });
        return res.end(JSON.stringify({ id: LEASE_ID, uri: `${state.url}/backends/weighted/${LEASE_ID}`, created_at: "2025-01-01T00:00:00Z", ...lease, backends: {} }));
      }
      if (req.method === "DELETE" && req.url === `/backends/weighted/${LEASE_ID}`) {
        res.writeHead(204);
        return res.end();
      }
      // The plan reads the child backends its creates introduce: each exists.
      const child = req.method === "GET" ? /^\/backends\/http_response\/(bkdhr_\w{27})$/.exec(req.url ?? "") : null;
      if (child) {
        res.writeHead(200, { "content-type": "application/json" });
        const id = child[1] as string;
        return res.end(
          JSON.stringify({
            id,
            uri: `${state.url}/backends/http_response/${id}`,
            created_at: "2025-01-01T00:00:00Z",
            description: "",
            metadata: "",
            body: "",
            headers: {},
            status_code: 200,
          }),
        );
      }
      if (req.method === "GET" && (req.url ?? "").startsWith(`/edges/https/${EDGE}`)) {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(
          JSON.stringify({
            id: EDGE,
            uri: `${state.url}/edges/https/${EDGE}`,
            created_at: "2025-01-01T00:00:00Z",
            description: "",
            metadata: "",
            hostports: [],
            routes: [{ id: ROUTE, edge_id: EDGE, uri: "", created_at: "2025-01-01T00:00:00Z", match: "/", match_type: "path_prefix", saml: null, circuit_breaker: null }],
          }),
        );
      }
      return error(400);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

describe("secret canary: the API key and the GitHub token are never printed or written", () => {
  let api: SpawnedServer;
  let echo: EchoServer;
  let gh: GitHubStandIn;
  const dirs: Array<{ remove(): void }> = [];
  const fresh = (prefix: string): string => {
    const d = tempDir(prefix);
    dirs.push(d);
    return d.path;
  };
  let env: Record<string, string>;

  beforeAll(async () => {
    const fixtures = join(fresh("canary-fixtures"), "fixtures.yaml");
    writeFileSync(fixtures, FIXTURES);
    api = await spawnServer(["--fixtures", fixtures], {}, { apiKey: KEY });
    echo = await startEchoServer();
    gh = await startGitHubStandIn(GH_TOKEN);
    env = { EDGEPLAN_API_URL: api.url, EDGEPLAN_API_KEY: KEY, GITHUB_TOKEN: GH_TOKEN };
  });
  afterAll(async () => {
    await api?.stop();
    await echo?.close();
    await gh?.close();
    for (const d of dirs) d.remove();
  });

  it("validate, plan in every format with --verbose, plan --out, apply, apply --plan, export", async () => {
    const cwd = fresh("canary-cli");
    writeManifests(cwd);
    const outputs: Array<{ label: string; text: string }> = [];
    const run = async (args: string[], expectCode: number): Promise<CliResult> => {
      const r = await runEdgeplan(args, { cwd, env, timeoutMs: 60_000 });
      outputs.push(...outputsOf(args.join(" "), r));
      expect(r.code, `${args.join(" ")}\n${r.stderr}`).toBe(expectCode);
      return r;
    };

    await run(["validate", "manifests"], 0);
    for (const format of ["text", "json", "markdown"]) {
      const r = await run(["plan", "manifests", "--verbose", "--format", format, "--detailed-exitcode"], 2);
      // --verbose really logs the requests (so this test looks at debug lines, not at nothing).
      expect(r.stderr).toMatch(/GET \/backends\/weighted\?limit=100 200/);
    }
    await run(["plan", "manifests", "--out", "plan.json"], 0);
    expect(JSON.parse(readFileSync(join(cwd, "plan.json"), "utf8")).format_version).toBe(1);
    const applied = await run(["apply", "manifests", "--plan", "plan.json", "--auto-approve", "--verbose"], 0);
    expect(applied.stdout).toMatch(/Converged/);
    writeManifests(cwd, 200);
    await run(["apply", "manifests", "--auto-approve", "--verbose", "--format", "markdown"], 0);
    await run(["plan", "manifests", "--detailed-exitcode", "--verbose"], 0);
    await run(["export", "--out", "exported", "--verbose"], 0);
    const files = filesUnder(cwd);
    expect(files.some((f) => f.label.includes("exported"))).toBe(true);
    outputs.push(...files);
    expectNoSecret(outputs);
  });

  it("the key from --api-key-file, and a key file holding a control character", async () => {
    const cwd = fresh("canary-keyfile");
    writeManifests(cwd);
    writeFileSync(join(cwd, "key"), `${KEY}\n`);
    writeFileSync(join(cwd, "bad-key"), `${KEY}\u0007\n`);
    const noKeyEnv = { EDGEPLAN_API_URL: api.url };
    const ok = await runEdgeplan(["plan", "manifests", "--api-key-file", "key", "--verbose"], { cwd, env: noKeyEnv });
    expect(ok.code, ok.stderr).toBe(0);
    const bad = await runEdgeplan(["plan", "manifests", "--api-key-file", "bad-key", "--verbose"], { cwd, env: noKeyEnv });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe("edgeplan: --api-key-file bad-key: the API key contains spaces, control or non-ASCII characters, which cannot be sent in a header\n");
    expectNoSecret([...outputsOf("key file", ok), ...outputsOf("bad key file", bad)]);
  });

  describe.concurrent("error paths", () => {
    it("401: a key the server does not know", async () => {
      const cwd = fresh("canary-401");
      writeManifests(cwd);
      const outputs: Array<{ label: string; text: string }> = [];
      for (const args of [
        ["plan", "manifests", "--verbose"],
        ["apply", "manifests", "--auto-approve", "--verbose"],
        ["export", "--out", "x"],
      ]) {
        const r = await runEdgeplan(args, { cwd, env: { ...env, EDGEPLAN_API_KEY: WRONG_KEY } });
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/401 ERR_NGROK_203: .*the API key was refused/);
        outputs.push(...outputsOf(`401 ${args[0]}`, r));
      }
      expectNoSecret([...outputs, ...filesUnder(cwd)]);
    });

    it("a network failure, and TLS to a port that speaks plain HTTP", async () => {
      const cwd = fresh("canary-net");
      writeManifests(cwd);
      const closed = `http://127.0.0.1:${new URL(api.url).port === "1" ? 2 : 1}`;
      const r1 = await runEdgeplan(["plan", "manifests", "--verbose", "--retries", "1"], { cwd, env: { ...env, EDGEPLAN_API_URL: closed } });
      expect(r1.code).toBe(1);
      expect(r1.stderr).toMatch(/no answer from http:\/\/127\.0\.0\.1:[12]/);
      const r2 = await runEdgeplan(["plan", "manifests", "--verbose", "--retries", "0"], { cwd, env: { ...env, EDGEPLAN_API_URL: api.url.replace("http:", "https:") } });
      expect(r2.code).toBe(1);
      expectNoSecret([...outputsOf("network", r1), ...outputsOf("tls", r2)]);
    });

    it("an invalid manifest", async () => {
      const cwd = fresh("canary-invalid");
      writeManifests(cwd);
      writeFileSync(join(cwd, "manifests", "bad.yaml"), "kind: WeightedBackend\nname: Bad\nbackends: {x: 1}\n");
      const outputs: Array<{ label: string; text: string }> = [];
      for (const args of [
        ["validate", "manifests"],
        ["plan", "manifests", "--verbose"],
        ["apply", "manifests", "--auto-approve"],
      ]) {
        const r = await runEdgeplan(args, { cwd, env });
        expect(r.code).toBe(1);
        outputs.push(...outputsOf(`invalid ${args[0]}`, r));
      }
      expectNoSecret(outputs);
    });
  });

  describe("a server that echoes the key back", () => {
    for (const mode of ["500", "401", "not-json", "foreign-next-page", "400-on-write"] as const) {
      it(`answers ${mode}`, async () => {
        echo.mode = mode;
        const cwd = fresh(`canary-echo-${mode}`);
        writeManifests(cwd);
        const echoEnv = { ...env, EDGEPLAN_API_URL: echo.url };
        const outputs: Array<{ label: string; text: string }> = [];
        for (const args of [
          ["plan", "manifests", "--verbose", "--retries", "1", "--format", "json"],
          ["apply", "manifests", "--auto-approve", "--verbose", "--retries", "1"],
          ["export", "--out", "x", "--verbose", "--retries", "1"],
        ]) {
          const r = await runEdgeplan(args, { cwd, env: echoEnv, timeoutMs: 60_000 });
          // Reads fail in every mode but the last, where the reads plan needs are answered and everything else is
          // refused: apply ends with 3 (its writes failed), export with 1 (its edge list failed).
          const expected = mode !== "400-on-write" ? 1 : args[0] === "apply" ? 3 : args[0] === "plan" ? 0 : 1;
          expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(expected);
          expect(r.stderr).not.toMatch(/internal error/);
          outputs.push(...outputsOf(`echo ${mode} ${args[0]}`, r));
        }
        expectNoSecret([...outputs, ...filesUnder(cwd)]);
      });
    }
  });

  describe("the GitHub Action", () => {
    it("on a pull request (plan, sticky comment, summary, outputs) and on push (apply)", async () => {
      const workspace = fresh("canary-action");
      writeManifests(workspace, 300);
      const outputs: Array<{ label: string; text: string }> = [];
      const pr = runnerEnv({
        event: "pull_request",
        githubApiUrl: gh.url,
        pr: { number: 7, headSha: "abc123" },
        workspace,
        inputs: { "api-key": KEY, "api-url": api.url, paths: "manifests", "github-token": GH_TOKEN },
      });
      const planRun = await runEdgeplan(["action"], { cwd: workspace, env: pr.env, timeoutMs: 60_000 });
      expect(planRun.code, planRun.stderr).toBe(0);
      // The key is handed to the runner's masking, and there only.
      expect(planRun.stdout).toContain(`::add-mask::${KEY}\n`);
      const comments = gh.comments.get("acme/routes#7") ?? [];
      expect(comments).toHaveLength(1);
      outputs.push(...outputsOf("action pr", planRun), { label: "comment", text: comments.map((c) => c.body).join("\n") });
      outputs.push({ label: "summary", text: pr.summary() }, { label: "outputs", text: JSON.stringify(pr.outputs()) }, ...filesUnder(pr.dir));
      outputs.push({ label: "GitHub calls", text: JSON.stringify(gh.calls.map((c) => ({ ...c, authorization: undefined }))) });

      const push = runnerEnv({
        event: "push",
        ref: "refs/heads/main",
        githubApiUrl: gh.url,
        workspace,
        inputs: { command: "apply", "api-key": KEY, "api-url": api.url, paths: "manifests", "github-token": GH_TOKEN, ack: "traffic-shift" },
      });
      const applyRun = await runEdgeplan(["action"], { cwd: workspace, env: push.env, timeoutMs: 60_000 });
      expect(applyRun.code, applyRun.stdout + applyRun.stderr).toBe(0);
      expect(push.summary()).toMatch(/Converged|converged/);
      outputs.push(...outputsOf("action push", applyRun), { label: "push summary", text: push.summary() }, ...filesUnder(push.dir));

      // A wrong key on a pull request: the failure is commented and summarised, still without the key.
      const failing = runnerEnv({
        event: "pull_request",
        githubApiUrl: gh.url,
        pr: { number: 8, headSha: "def456" },
        workspace,
        inputs: { "api-key": WRONG_KEY, "api-url": api.url, paths: "manifests", "github-token": GH_TOKEN },
      });
      const failRun = await runEdgeplan(["action"], { cwd: workspace, env: failing.env, timeoutMs: 60_000 });
      expect(failRun.code).toBe(1);
      outputs.push(...outputsOf("action 401", failRun), { label: "401 summary", text: failing.summary() }, ...filesUnder(failing.dir));
      outputs.push({ label: "all comments", text: JSON.stringify([...gh.comments.values()]) });
      expectNoSecret(outputs, true);
    });
  });

  it("serve: start-up errors name no key, and the request log of everything above holds none", async () => {
    const cwd = fresh("canary-serve");
    const r = await runEdgeplan(["serve", "--port", "0", "--api-key", KEY, "--fixtures", "missing.yaml"], { cwd });
    expect(r.code).toBe(1);
    const busy = await runEdgeplan(["serve", "--port", new URL(api.url).port, "--api-key", KEY], { cwd, env: { EDGEPLAN_SERVE_API_KEYS: WRONG_KEY } });
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/address is in use/);
    // The request log saw the 401s of the wrong key and every request above.
    const log = api.stderr();
    expect(log).toMatch(/"status":401/);
    expect(log.split("\n").length).toBeGreaterThan(30);
    expectNoSecret([...outputsOf("serve missing fixtures", r), ...outputsOf("serve busy port", busy), { label: "serve request log", text: log + api.stdout() }]);
  });
});
