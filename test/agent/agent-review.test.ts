/**
 * `edgeplan agent` on a source that verifies commits and reads the merged pull requests, end to end over real parts:
 * a bare repository with SSH-signed commits, `edgeplan serve`, the loopback stand-in of GitHub, the agent as a process
 * of the built CLI and a webhook receiver. A risky commit waits; an `/edgeplan ack` by someone who may not merge
 * changes nothing; one by someone who may, naming the plan's digest in the pull request that merged the commit, lets
 * the agent apply it. An unsigned commit is refused: the stack is Stalled with the reason, one `failed` notification
 * is sent however often the source is fetched again, and the last verified commit stays applied; the next signed
 * commit recovers.
 */
import { createServer, type Server } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { apiClient, http, spawnServer, type SpawnedServer } from "../helpers/server.js";
import { canary, startCli, tempDir, type RunningCli } from "../reliability/cli.js";
import { CHILDREN, FIXTURES, keyPair, makeRepo, until, wb } from "./world.js";

const [A] = CHILDREN;

interface Stack {
  conditions: Array<{ type: string; status: string; reason: string; message: string }>;
  waiting: Array<{ rule: string; digest: string; command: string }>;
  last_applied_revision: { sha: string } | null;
}

describe("edgeplan agent with signed commits and pull request acknowledgements", () => {
  const dir = tempDir("agent-review");
  const apiKey = `key-${canary()}`;
  const ghToken = `ghs_${canary()}`;
  let server: SpawnedServer;
  let gh: GitHubStandIn;
  let agent: RunningCli;
  let receiver: Server;
  const events: Array<{ stack: string; event: string; message: string }> = [];
  afterAll(async () => {
    agent?.proc.kill("SIGKILL");
    await server?.stop();
    await gh?.close();
    receiver?.close();
    dir.remove();
  });

  it("applies a risky commit once a person who may merge acknowledges it in the pull request, and refuses an unsigned one", async () => {
    const signer = keyPair(dir.path, "signer");
    writeFileSync(join(dir.path, "allowed_signers"), `ann@example.com ${signer.pub}\n`);
    const { bare, commit } = makeRepo(dir.path);
    commit({ "prod/edgeplan.yaml": "max_shift: 20\n", "prod/backends.yaml": wb("api", 50, 50) }, "first routing", signer.key);
    writeFileSync(join(dir.path, "fixtures.yaml"), FIXTURES);
    server = await spawnServer(["--fixtures", join(dir.path, "fixtures.yaml")], {}, { apiKey });
    const api = apiClient(server.url, apiKey);
    gh = await startGitHubStandIn(ghToken);
    gh.permissions.set("alice", "write");
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        events.push(JSON.parse(body) as (typeof events)[number]);
        res.end("ok");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/events`;
    writeFileSync(join(dir.path, "key"), `${apiKey}\n`);
    writeFileSync(
      join(dir.path, "agent.yaml"),
      "sources:\n  - name: routing\n" +
        `    url: ${bare}\n    interval: 1s\n    verify: {allowed_signers_file: allowed_signers}\n` +
        `    pull_requests: {repository: acme/routes, api_url: "${gh.url}", token_env: GH_TOKEN}\n` +
        `stacks:\n  - {name: prod, source: routing, path: prod, api_url: "${server.url}", api_key_file: key, interval: 1s, retry_interval: 1s}\n` +
        `notifications:\n  - {name: ops, type: webhook, url: "${hookUrl}"}\n`,
    );
    agent = startCli(["agent", "--config", "agent.yaml", "--listen", "127.0.0.1:0", "--data", "agent.db", "--lock-ttl", "3s"], {
      cwd: dir.path,
      env: { GH_TOKEN: ghToken },
      timeoutMs: 120_000,
    });
    const url = await until("listening", 15_000, async () => /listening on (http:\S+)/.exec(agent.stdout())?.[1]);
    // Three times what each step takes on a quiet machine; a miss shows what the agent printed.
    const step = <T>(what: string, ms: number, check: () => Promise<T | undefined>) => until(what, ms * 3, check, () => agent.stderr().slice(-4000));
    const prod = async () => (await http(url, "GET", "/api/stacks/prod")).json as Stack;
    const weightA = async () => {
      const all = (await api.get("/backends/weighted")).json as { backends: Array<{ metadata: string; backends: Record<string, number> }> };
      return all.backends.find((w) => w.metadata.includes('"name":"api"'))?.backends[A];
    };
    await step("first commit applied", 10_000, async () => ((await weightA()) === 50 ? true : undefined));

    // A risky commit, merged by pull request #7: it waits for a person.
    const risky = commit({ "prod/backends.yaml": wb("api", 10, 90) }, "shift api", signer.key);
    gh.pulls.set(risky, [{ number: 7, merged_at: "2026-11-28T10:00:00Z", merge_commit_sha: risky, base: { ref: "main" }, head: { sha: "5e".repeat(20) } }]);
    const waiting = await step("waits", 10_000, async () => (await prod()).waiting.find((w) => w.rule === "traffic-shift"));
    const digest = waiting.digest.slice(0, 12);

    // Someone who may not merge acknowledges: the agent asks GitHub, and the next reconciliation still waits.
    gh.comment("acme/routes#7", "bob", `/edgeplan ack traffic-shift --digest ${digest}`);
    await step("bob's permission asked", 10_000, async () => (gh.calls.some((c) => c.path.endsWith("/collaborators/bob/permission")) ? true : undefined));
    const asked = gh.calls.length;
    await step("asked again", 10_000, async () => (gh.calls.slice(asked).some((c) => c.path.endsWith("/pulls")) ? true : undefined));
    expect((await prod()).waiting.map((w) => w.rule)).toEqual(["traffic-shift"]);
    expect(await weightA()).toBe(50);

    // Someone who may merge acknowledges this plan in the pull request: it is applied.
    gh.comment("acme/routes#7", "alice", `LGTM\n/edgeplan ack traffic-shift --digest ${digest}`);
    await step("applied after the pull request's ack", 10_000, async () => ((await weightA()) === 10 ? true : undefined));
    expect(agent.stderr()).toContain(`stack prod: traffic-shift acknowledged by @alice in pull request #7 for plan ${digest}`);
    expect(gh.calls.every((c) => c.authorization === `token ${ghToken}`)).toBe(true);

    // An unsigned commit is refused: Stalled with the reason, one failed notification, the last verified commit stays.
    const unsigned = commit({ "prod/backends.yaml": wb("api", 20, 80) }, "unsigned change");
    const stalled = await step("stalled", 10_000, async () => (await prod()).conditions.find((c) => c.type === "Stalled" && c.status === "True"));
    expect(stalled).toMatchObject({ reason: "UnverifiedCommit" });
    expect(stalled.message).toBe(`source routing: commit ${unsigned.slice(0, 12)} is refused: it is not signed; the last verified commit stays applied`);
    const refusals = () => agent.stderr().split(`commit ${unsigned.slice(0, 12)} is refused`).length - 1;
    await step("fetched and refused three times", 10_000, async () => (refusals() >= 3 ? true : undefined));
    expect(events.filter((e) => e.event === "failed").map((e) => e.message)).toEqual([stalled.message]);
    expect((await prod()).last_applied_revision?.sha).toBe(risky);
    expect(await weightA()).toBe(10);

    // The next signed commit is verified, applied, and the stack recovers.
    commit({ "prod/backends.yaml": wb("api", 25, 75) }, "signed again", signer.key);
    await step("recovered", 10_000, async () => ((await weightA()) === 25 && events.some((e) => e.event === "recovered") ? true : undefined));
    expect((await prod()).conditions.find((c) => c.type === "Stalled")?.status).toBe("False");
    for (const text of [agent.stdout(), agent.stderr(), JSON.stringify(events)]) {
      for (const secret of [apiKey, ghToken]) expect(text).not.toContain(secret);
    }
    agent.proc.kill("SIGTERM");
    expect((await agent.done).code).toBe(0);
  }, 180_000);
});
