/** The `edgeplan action` command of the built CLI: registration, exit code, outputs file, masking. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runnerEnv } from "./env.js";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { runActionCli } from "./run-cli.js";

const CANARY = "ep_canary_cli_N4v8Qw2Lp6Xs";
let gh: GitHubStandIn;
beforeAll(async () => {
  gh = await startGitHubStandIn("ghs_cli_token_x1");
});
afterAll(async () => {
  await gh.close();
});

describe("edgeplan action (built CLI)", () => {
  it("fails on a wrong input with an annotation, after masking, and writes the outputs", async () => {
    const runner = runnerEnv({
      event: "pull_request",
      githubApiUrl: gh.url,
      pr: { number: 3, headSha: "abc" },
      inputs: { "api-key": CANARY, ack: "yolo" },
    });
    const run = await runActionCli(runner.env, runner.workspace);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      `::add-mask::${CANARY}\n::error title=edgeplan::input ack: unknown rule "yolo"; the rules are auth-removal, traffic-shift, no-traffic, mass-delete\n`,
    );
    expect(run.stderr).toBe('edgeplan: input ack: unknown rule "yolo"; the rules are auth-removal, traffic-shift, no-traffic, mass-delete\n');
    expect(runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "1", "plan-file": "" });
    expect(gh.calls).toHaveLength(0);
  });

  it("fails with a hint when no API key reaches it", async () => {
    const runner = runnerEnv({ event: "push", ref: "refs/heads/main", githubApiUrl: gh.url, inputs: {} });
    const run = await runActionCli(runner.env, runner.workspace);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("::error title=edgeplan::no API key: set the action's api-key input from a secret (api-key: ${{ secrets.EDGEPLAN_API_KEY }})\n");
    expect(run.stderr.split("\n")[0]).toBe('edgeplan action: apply of stack "default" (event push)');
    expect(runner.summary()).toContain("### edgeplan apply: stack `default`\n\n**The apply failed.**");
  });
});
