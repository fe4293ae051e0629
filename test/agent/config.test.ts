/**
 * The agent's configuration (src/agent/config.ts): a whole file becomes the AgentConfig the loop runs on; every
 * problem is refused at its `file:line:col` before the agent starts, all of them at once; no secret may be written
 * in the file.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadAgentConfig } from "../../src/agent/config.js";

const dir = mkdtempSync(join(tmpdir(), "edgeplan-agent-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function problems(text: string): Promise<string> {
  writeFileSync(join(dir, "agent.yaml"), text);
  return loadAgentConfig("agent.yaml", dir).then(
    () => "loaded",
    (err: Error) => err.message,
  );
}

describe("the agent's configuration", () => {
  it("becomes the AgentConfig: defaults filled, durations in ms, paths absolute against its folder, secrets as references", async () => {
    writeFileSync(
      join(dir, "agent.yaml"),
      `sources:
  - name: routing
    url: repo.git
    ref: release
    verify: {allowed_signers_file: signers}
    webhook: {secret_env: HOOK}
  - {name: remote, url: "https://git.example.com/r.git", username: bot, password_file: /etc/t, interval: 30s, timeout: 10s}
  - name: hub
    url: "https://github.com/acme/routing.git"
    pull_requests: {repository: acme/routing, token_env: GH}
stacks:
  - {name: prod, source: routing, path: prod, env: production, api_url: "https://api.example.com", api_key_file: key, mode: warn, prune: true}
  - {name: web, source: remote, interval: 1h, retry_interval: 5s, max_retry_interval: 1m, suspend: true}
notifications:
  - {name: ops, type: webhook, url: "https://hooks.example.com/e", secret_file: s, events: [failed, recovered], stacks: [prod]}
  - {name: chat, type: slack, url_env: SLACK_URL}
  - {name: gh, type: github, token_env: GH, repository: acme/routing}
history: 5
`,
    );
    expect(await loadAgentConfig("agent.yaml", dir)).toEqual({
      file: "agent.yaml",
      sources: [
        {
          name: "routing",
          url: join(dir, "repo.git"),
          ref: "release",
          intervalMs: 60_000,
          timeoutMs: 60_000,
          allowedSignersFile: join(dir, "signers"),
          webhookSecret: { env: "HOOK" },
        },
        { name: "remote", url: "https://git.example.com/r.git", ref: "main", intervalMs: 30_000, timeoutMs: 10_000, username: "bot", password: { file: "/etc/t" } },
        {
          name: "hub",
          url: "https://github.com/acme/routing.git",
          ref: "main",
          intervalMs: 60_000,
          timeoutMs: 60_000,
          pullRequests: { repository: "acme/routing", apiUrl: "https://api.github.com", token: { env: "GH" }, commentAuthor: "github-actions[bot]" },
        },
      ],
      stacks: [
        {
          name: "prod",
          source: "routing",
          path: "prod",
          env: "production",
          apiUrl: "https://api.example.com",
          apiKey: { file: join(dir, "key") },
          intervalMs: 300_000,
          retryIntervalMs: 30_000,
          maxRetryIntervalMs: 600_000,
          mode: "warn",
          prune: true,
          suspend: false,
        },
        { name: "web", source: "remote", path: ".", intervalMs: 3_600_000, retryIntervalMs: 5_000, maxRetryIntervalMs: 60_000, mode: "correct", prune: false, suspend: true },
      ],
      notifications: [
        { name: "ops", type: "webhook", url: "https://hooks.example.com/e", secret: { file: join(dir, "s") }, events: ["failed", "recovered"], stacks: ["prod"] },
        { name: "chat", type: "slack", url: "", secret: { env: "SLACK_URL" }, events: ["applied", "failed", "drift_detected", "drift_corrected", "waiting", "recovered"] },
        {
          name: "gh",
          type: "github",
          url: "",
          token: { env: "GH" },
          repository: "acme/routing",
          events: ["applied", "failed", "drift_detected", "drift_corrected", "waiting", "recovered"],
        },
      ],
      historyLimit: 5,
    });
  });

  it("refuses a file with no source or no stack, saying what to add", async () => {
    expect(await problems("sources: []\nstacks: []\n")).toBe(
      [
        "agent.yaml:1:10: sources: name at least one source (a git repository to fetch)",
        "agent.yaml:2:9: stacks: name at least one stack (a folder of a source to reconcile)",
        "2 problems in the agent's configuration; the agent did not start",
      ].join("\n"),
    );
  });

  it("refuses a secret written in the file, at its key, and a wrong value at its line", async () => {
    expect(await problems("sources:\n  - name: routing\n    url: repo.git\n    password: hunter2\nstacks:\n  - {name: prod, source: routing, mode: fix, api_key: k}\n")).toBe(
      [
        "agent.yaml:4:5: password: write no password here: use password_file or password_env",
        'agent.yaml:6:41: stacks[0].mode: the text "fix" is not allowed; use correct or warn or detect',
        "agent.yaml:6:46: api_key: write no API key here: use api_key_file or api_key_env",
        "3 problems in the agent's configuration; the agent did not start",
      ].join("\n"),
    );
  });

  it("refuses unknown sources, paths out of the repository, bad durations, twice the same stack, incomplete notifications: all at once", async () => {
    expect(
      await problems(
        "sources:\n  - {name: routing, url: repo.git, ref: -x, pull_requests: {repository: acme/r, api_url: http://gh.example.com}}\nstacks:\n  - {name: prod, source: routng, path: ../x, interval: 5q}\n  - {name: prod, source: routing}\nnotifications:\n  - {name: n, type: github}\n  - {name: w, type: webhook, url: http://hooks.example.com, stacks: [prdo]}\n",
      ),
    ).toBe(
      [
        'agent.yaml:2:41: ref: "-x" is not a branch or tag name',
        "agent.yaml:2:60: pull_requests: give token_file or token_env",
        "agent.yaml:2:90: api_url: an https:// URL (plain http:// only to a loopback host)",
        "agent.yaml:4:26: source: no source routng; the sources are routing; did you mean routing?",
        "agent.yaml:4:40: path: a folder inside the repository, without .. (e.g. prod)",
        'agent.yaml:4:56: interval: expected a duration of at least 1s (30s, 5m, 1h), got "5q"',
        "agent.yaml:5:12: stack prod is defined twice; names must be unique",
        "agent.yaml:7:5: a github notification needs token_file (or token_env) and repository: owner/name",
        "agent.yaml:8:35: url: an https:// URL (plain http:// only to a loopback host)",
        "agent.yaml:8:70: stacks: no stack prdo",
        "10 problems in the agent's configuration; the agent did not start",
      ].join("\n"),
    );
  });
});
