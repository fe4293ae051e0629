/**
 * docs/agent.md's quick start runs as written: its shell block, with `/tmp/` in a temporary folder, the package's
 * folder as this repository, the built CLI as `edgeplan`, a free port for the server, and the agent (which the reader
 * leaves in the foreground) in the background on a free port. The agent applies the first commit: `agent status`
 * shows the stack Ready at that commit, and the server holds the example's weighted backend.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, REPO_ROOT } from "../helpers/cli-path.js";
import { freePort } from "../helpers/prometheus.js";
import { apiClient } from "../helpers/server.js";
import { fencedBlocks } from "../package/readme-blocks.js";
import { runEdgeplan, tempDir } from "../reliability/cli.js";
import { until } from "./world.js";

const dir = tempDir("agent-quick-start");
const pids: number[] = [];
afterAll(() => {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  dir.remove();
});

/** The quick start's block, made to run here (see the file's comment); the two servers' pids go to files. */
function quickStart(port: number): string {
  const block = fencedBlocks(readFileSync(join(REPO_ROOT, "docs", "agent.md"), "utf8")).find((b) => b.marker?.startsWith("test/agent/quick-start.test.ts"));
  if (!block) throw new Error("docs/agent.md: no block marked for test/agent/quick-start.test.ts");
  return block.body
    .replaceAll("/tmp/", `${dir.path}/`)
    .replaceAll("$(npm root -g)/edgeplan", REPO_ROOT)
    .replaceAll("4780", String(port))
    .replace(/(^|\s)edgeplan (serve|agent) /gm, `$1"${process.execPath}" "${CLI}" $2 `)
    .replace(/ &$/m, ` > "${dir.path}/serve.out" 2>&1 &\necho $! > "${dir.path}/serve.pid"`)
    .replace(/^(.* agent --config .*)$/m, `$1 --listen 127.0.0.1:0 > "${dir.path}/agent.out" 2>&1 &\necho $! > "${dir.path}/agent.pid"`);
}

describe("docs/agent.md's quick start", () => {
  it("runs as written: the agent applies the first commit and agent status shows it Ready", async () => {
    const port = await freePort();
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir.path,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "Ann",
      GIT_AUTHOR_EMAIL: "ann@example.com",
      GIT_COMMITTER_NAME: "Ann",
      GIT_COMMITTER_EMAIL: "ann@example.com",
    };
    execFileSync("bash", ["-euo", "pipefail", "-c", quickStart(port)], { cwd: dir.path, env, stdio: "pipe", timeout: 30_000 });
    for (const f of ["serve.pid", "agent.pid"]) pids.push(Number(readFileSync(join(dir.path, f), "utf8")));
    const out = () => readFileSync(join(dir.path, "agent.out"), "utf8");
    const url = await until("the agent listens", 15_000, async () => /listening on (http:\S+)/.exec(out())?.[1], out);
    const line = await until(
      "prod is Ready",
      30_000,
      async () => {
        const status = await runEdgeplan(["agent", "status", "--agent-url", url], { cwd: dir.path });
        return status.stdout.split("\n").find((l) => /^prod\s.*\sTrue\s/.test(l));
      },
      out,
    );
    const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: join(dir.path, "routing"), encoding: "utf8" }).trim();
    expect(line).toMatch(new RegExp(`^prod  correct  ${head.slice(0, 12)}  True   False      Apply complete: 3 done\\. Converged: the live state matches the manifests\\.$`));
    const key = readFileSync(join(dir.path, "edgeplan-key"), "utf8").trim();
    const live = (await apiClient(`http://127.0.0.1:${port}`, key).get("/backends/weighted")).json as { backends: Array<{ metadata: string }> };
    expect(live.backends.filter((w) => w.metadata.includes('"name":"storefront"'))).toHaveLength(1);
  }, 90_000);
});
