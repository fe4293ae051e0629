/**
 * Every command's `--help` lists exactly the options the command reads: the shared tables of src/cli.ts give each
 * command only its own (`unlock` takes no `--prune`, no `--stack`, no `--concurrency`; `export` shows no colour).
 * The commands are taken from `edgeplan --help`, so a new command without an entry here fails.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/server.js";

const CLIENT = ["--config", "--env", "--api-url", "--api-key-file"];
const WIRE = ["--rate-limit", "--retries", "--timeout", "--version-header", "--insecure-http"];
const PLANNING = [...CLIENT, "--stack", "--takeover", "--local", "--fixtures", "--concurrency", ...WIRE];
const SCOPE = ["--target", "--exclude"];
const PLAN_SHARED = [...SCOPE, "--prune", "--no-prune", "--max-shift", "--max-deletes"];

const EXPECTED: Record<string, string[]> = {
  validate: ["--config", "--env", "--format", "--verbose", "--all-envs"],
  plan: ["--format", "--out", "--html", "--detailed-exitcode", ...PLAN_SHARED, ...PLANNING, "--no-color", "--verbose"],
  apply: [
    "--plan",
    "--auto-approve",
    "--ack",
    "--force",
    "--refresh",
    "--wait",
    "--wait-timeout",
    "--retry-rollout",
    "--format",
    "--html",
    "--quiet",
    "--lock-timeout",
    "--lock-ttl",
    ...PLAN_SHARED,
    ...PLANNING,
    "--no-color",
    "--verbose",
  ],
  show: ["--format", "--no-color", "--config", "--env"],
  export: [...SCOPE, "--out", "--force", "--route", ...PLANNING, "--verbose"],
  init: ["--stack", "--api-url", "--dir", "--yes", "--force"],
  fmt: ["--config", "--env", "--check"],
  state: [],
  policy: [],
  rollout: [],
  unlock: ["--lease-id", "--force", ...CLIENT, "--local", ...WIRE, "--verbose"],
  demo: [],
  schema: ["--out"],
  serve: [
    "--host",
    "--port",
    "--data",
    "--database",
    "--pool-size",
    "--fixtures",
    "--api-key",
    "--public-url",
    "--sp-base",
    "--version-header",
    "--rate-limit",
    "--max-inflight",
    "--latency",
    "--fail-rate",
    "--drop-rate",
    "--fault-seed",
    "--headers-timeout",
    "--request-timeout",
    "--quiet",
    "--log-format",
    "--log-level",
    "--admin-listen",
    "--metrics",
    "--tls-cert",
    "--tls-key",
    "--drain-delay",
    "--drain-timeout",
  ],
  agent: ["--config", "--listen", "--data", "--database", "--token-file", "--cache", "--lock-ttl", "--rate-limit", "--concurrency", "--retries", "--timeout"],
  action: [],
  completion: [],
};

/**
 * Subcommands, with their options: `state list` reads the stack's objects, `state release` writes one marker or
 * entry; the `rollout` actions take the stack's lease as apply does, `status` and `promote --full` read manifests;
 * `policy test` reads only the project file (in one of its environments) and its cases.
 */
const SUBCOMMANDS: Record<string, string[]> = {
  "state list": ["--format", ...CLIENT, "--stack", "--local", ...WIRE, "--verbose"],
  "state release": [...CLIENT, "--stack", "--local", ...WIRE, "--verbose"],
  "policy test": ["--config", "--env"],
  "rollout status": ["--format", "--manifests", ...CLIENT, "--stack", "--local", ...WIRE, "--verbose"],
  "rollout promote": ["--full", "--manifests", "--lock-timeout", "--lock-ttl", ...CLIENT, "--stack", "--local", ...WIRE, "--verbose"],
  "rollout abort": ["--lock-timeout", "--lock-ttl", ...CLIENT, "--stack", "--local", ...WIRE, "--verbose"],
  "rollout retry": ["--lock-timeout", "--lock-ttl", ...CLIENT, "--stack", "--local", ...WIRE, "--verbose"],
  "agent status": ["--format", "--agent-url", "--token-file"],
  "agent ack": ["--digest", "--by", "--agent-url", "--token-file"],
  "agent reconcile": ["--agent-url", "--token-file"],
  "agent suspend": ["--agent-url", "--token-file"],
  "agent resume": ["--agent-url", "--token-file"],
};

/** The long flags of a help text's Options section, in order, `--help` left out. */
function flagsOf(help: string): string[] {
  const section = help.split(/^Options:$/m)[1] ?? "";
  return [...section.matchAll(/^ {2}(?:-\w, )?(--[a-z-]+)/gm)].map((m) => m[1] as string).filter((f) => f !== "--help");
}

describe("--help of every command", () => {
  it("lists the commands this test knows", async () => {
    const top = await runCli(["--help"]);
    expect(top.code).toBe(0);
    const commands = [...(top.stdout.split(/^Commands:$/m)[1] ?? "").matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1]).filter((c) => c !== "help");
    expect(commands).toEqual(Object.keys(EXPECTED));
  });

  for (const [command, flags] of Object.entries({ ...EXPECTED, ...SUBCOMMANDS })) {
    it(`${command} lists exactly its options`, async () => {
      const help = await runCli([...command.split(" "), "--help"]);
      expect(help.code, help.stderr).toBe(0);
      expect(flagsOf(help.stdout)).toEqual(flags);
    });
  }
});

describe("a mistyped command or option", () => {
  it.each([
    [["aply"], "error: unknown command 'aply'\n(Did you mean apply?)\nRun 'edgeplan --help' for usage.\n"],
    [["plan", "--formt", "json"], "error: unknown option '--formt'\n(Did you mean --format?)\nRun 'edgeplan plan --help' for usage.\n"],
    [
      ["plan", "--format", "yaml"],
      "error: option '--format <format>' argument 'yaml' is invalid. Allowed choices are text, json, markdown, html.\nRun 'edgeplan plan --help' for usage.\n",
    ],
    [["state", "lst"], "error: unknown command 'lst'\n(Did you mean list?)\nRun 'edgeplan state --help' for usage.\n"],
    [["policy", "test", "--evn", "x"], "error: unknown option '--evn'\n(Did you mean --env?)\nRun 'edgeplan policy test --help' for usage.\n"],
  ])("edgeplan %s: the error, the suggestion and where the help is, not the whole help; exit 1", async (args, stderr) => {
    const r = await runCli(args);
    expect(r).toMatchObject({ code: 1, stdout: "", stderr });
  });
});
