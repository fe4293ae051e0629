#!/usr/bin/env node
/**
 * The command-line adapter: parses flags with commander and hands them to `commands/`. Each command registers in a
 * function of its own; the options several commands share are written once, in the tables below. Command modules
 * are imported lazily so that `edgeplan --version` stays fast. Every error ends here, in one handler, which owns the
 * exit code (src/commands/outcome.ts).
 *
 * Options that the project file (`edgeplan.yaml`) can set have no commander default: left out, they stay undefined
 * so that src/commands/project.ts can tell a flag from nothing, and the built-in default applies last.
 */
import { readFileSync } from "node:fs";
import { Argument, Command, Option } from "commander";
import { redactorOfProcess } from "./commands/io.js";
import { guardOutcome, type CommandOutcome } from "./commands/outcome.js";
import { EdgeplanError, EXIT } from "./model/errors.js";

// Two folders up from both dist/src/cli.js and the bundle's dist/cli/edgeplan.js.
const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

/** How a command reports its exit code to `main`. */
type Done = (code: number) => void;

/** One option of a table: commander's flags and description, and how its value is read. */
interface OptionSpec {
  flags: string;
  description: string;
  default?: string | boolean;
  /** Environment variable read when the flag is not given. */
  env?: string;
  choices?: readonly string[];
  /** Repeatable: every value is kept, in order. */
  repeat?: boolean;
  /** Not an option of the command: left out of the help, and given, an error with this message (its value is never shown). */
  refused?: string;
  /** The commands of a shared table that take it (default: all of them): a command lists only what it reads. */
  only?: readonly CommandName[];
}

/** The commands that share the tables below. */
type CommandName = "plan" | "apply" | "export" | "unlock" | "state" | "rollout";

const collect = (value: string, all: string[] | undefined): string[] => [...(all ?? []), value];

/** Adds the options of `table` to `cmd` (those of another command left out). */
function addOptions(cmd: Command, table: readonly OptionSpec[], name?: CommandName): Command {
  for (const spec of table) {
    if (spec.only !== undefined && (name === undefined || !spec.only.includes(name))) continue;
    const option = new Option(spec.flags, spec.description);
    if (spec.env !== undefined) option.env(spec.env);
    if (spec.choices !== undefined) option.choices(spec.choices);
    if (spec.repeat === true) option.argParser(collect);
    if (spec.default !== undefined) option.default(spec.default);
    if (spec.refused !== undefined) {
      const message = spec.refused;
      option.hideHelp();
      // Thrown while commander parses, before any action runs; main's caller prints it (exit 1).
      cmd.on(`option:${option.name()}`, () => {
        throw new EdgeplanError(message);
      });
    }
    cmd.addOption(option);
  }
  return cmd;
}

/** The commands that plan (or read as a plan does): they name a stack and run many requests at once. */
const PLANNING: readonly CommandName[] = ["plan", "apply", "export"];

/** `--config`: every command that reads the project file takes it. */
const CONFIG_OPTION: OptionSpec = { flags: "--config <file>", description: "project file to read instead of ./edgeplan.yaml" };

/** `--env`: the project file's environment; read from EDGEPLAN_ENV by the command, so that a message names its source. */
const ENV_OPTION: OptionSpec = { flags: "--env <name>", description: "environment of the project file to run in (or EDGEPLAN_ENV; required when it defines several)" };

/** Options of the commands that talk to the API (docs/cli.md, "Commands"); `only` marks those some of them lack. */
const COMMON_OPTIONS: readonly OptionSpec[] = [
  CONFIG_OPTION,
  ENV_OPTION,
  { flags: "--api-url <url>", description: "API base URL", env: "EDGEPLAN_API_URL" },
  { flags: "--api-key-file <file>", description: "read the API key from this file (else EDGEPLAN_API_KEY)" },
  {
    flags: "--api-key [key]",
    description: "",
    refused:
      "--api-key: the API key is not given on the command line (shell history and the process list would show it): " +
      "put it in a file and pass --api-key-file FILE, or set EDGEPLAN_API_KEY",
  },
  { flags: "--stack <name>", description: "stack name kept in owner markers (default: default)", env: "EDGEPLAN_STACK", only: [...PLANNING, "state", "rollout"] },
  { flags: "--takeover", description: "change objects that carry another stack's owner marker", default: false, only: PLANNING },
  { flags: "--local", description: "run against an embedded server with state in .edgeplan/local.db", default: false },
  { flags: "--fixtures <file>", description: "with --local: load edges, routes and backends from this fixtures file", only: PLANNING },
  { flags: "--concurrency <n>", description: "requests in flight at once (default: 4)", only: PLANNING },
  // Left out, the client's default applies (120/60s), and --local knows it was left out.
  { flags: "--rate-limit <n/duration>", description: "client-side request budget, e.g. 20/1s, or off (default: 120/60s; off with --local)" },
  { flags: "--retries <n>", description: "retries of a failed request (default: 5)" },
  { flags: "--timeout <duration>", description: "timeout of one request: milliseconds or a duration such as 30s (default: 30000)" },
  { flags: "--version-header <name>", description: "name of the API version header", default: "Ngrok-Version" },
  { flags: "--insecure-http", description: "allow plain http:// to a host that is not loopback", default: false },
  { flags: "--no-color", description: "no colour in text output", only: ["plan", "apply"] },
  { flags: "--verbose", description: "log every request to stderr", default: false },
];

/** `--target` and `--exclude`: plan, apply and export. */
const SCOPE_OPTIONS: readonly OptionSpec[] = [
  { flags: "--target <address>", description: "only this address (repeatable; * matches within one segment, e.g. weighted_backend.checkout*)", repeat: true },
  { flags: "--exclude <address>", description: "leave this address out (repeatable; * matches within one segment)", repeat: true },
];

const FORMAT_CHOICES = ["text", "json", "markdown", "html"] as const;

/** What plan and apply share: how the plan is made and shown. */
const PLAN_OPTIONS: readonly OptionSpec[] = [
  ...SCOPE_OPTIONS,
  { flags: "--prune", description: "delete owned objects that no manifest names (orphans)" },
  { flags: "--no-prune", description: "keep orphans, even when the project file says prune: true" },
  { flags: "--max-shift <points>", description: "traffic-shift risk above this many percentage points (default: 50)" },
  { flags: "--max-deletes <n>", description: "mass-delete risk above this many deletes (default: 10 or 30% of the stack)" },
];

const PLAN_ONLY_OPTIONS: readonly OptionSpec[] = [
  { flags: "--format <format>", description: "output format", choices: FORMAT_CHOICES, default: "text" },
  { flags: "--out <file>", description: "save the plan (JSON) for `apply --plan`" },
  { flags: "--html <file>", description: "also write the plan as a self-contained HTML page to this file" },
  { flags: "--detailed-exitcode", description: "exit 2 when there are changes (0: none, 1: error)", default: false },
];

const APPLY_ONLY_OPTIONS: readonly OptionSpec[] = [
  { flags: "--plan <file>", description: "apply this saved plan (from `plan --out`) instead of planning now" },
  { flags: "--auto-approve", description: "apply without asking for 'yes'", default: false },
  { flags: "--ack <rule>", description: "acknowledge a risk: auth-removal, traffic-shift, no-traffic, mass-delete (repeatable)", repeat: true },
  { flags: "--force", description: "acknowledge every risk", default: false },
  { flags: "--refresh", description: "with --plan: when the saved plan is stale, plan again from the manifests and apply that", default: false },
  { flags: "--wait", description: "go on step after step until every progressive rollout reaches the manifest's weights", default: false },
  { flags: "--wait-timeout <duration>", description: "with --wait: stop waiting after this long, e.g. 30m or 2h (default: 1h)" },
  { flags: "--retry-rollout <name>", description: "start again the halted rollout of this weighted backend (repeatable)", repeat: true },
  { flags: "--format <format>", description: "how the plan and the report are shown", choices: FORMAT_CHOICES, default: "text" },
  { flags: "--html <file>", description: "also write the report (with the plan) as a self-contained HTML page to this file" },
  { flags: "--quiet", description: "no progress on stderr while the changes run", default: false },
  { flags: "--lock-timeout <duration>", description: "wait this long for another apply of the stack to end (default: 5m); 0 fails at once" },
  { flags: "--lock-ttl <duration>", description: "this apply's lease on the stack expires this long after its last renewal (default: 1m)" },
];

const UNLOCK_OPTIONS: readonly OptionSpec[] = [
  { flags: "--lease-id <id>", description: "remove this lease (the id the lock error and unlock print) without asking" },
  { flags: "--force", description: "remove every lease of the stack without asking", default: false },
];

const EXPORT_OPTIONS: readonly OptionSpec[] = [
  ...SCOPE_OPTIONS,
  { flags: "--out <dir>", description: "folder to write into: new, empty, or holding an earlier export", default: "exported" },
  { flags: "--force", description: "overwrite files in --out that export did not write", default: false },
  { flags: "--route <edge_id/route_id>", description: "export this route (repeatable)", repeat: true },
];

const SERVE_OPTIONS: readonly OptionSpec[] = [
  { flags: "--host <host>", description: "address to listen on", default: "127.0.0.1" },
  { flags: "--port <port>", description: "port to listen on; 0 picks a free one", default: "4780" },
  { flags: "--data <file>", description: "SQLite file that keeps the state (default: in memory)" },
  { flags: "--database <url>", description: "PostgreSQL database shared by replicas (postgres://...); or EDGEPLAN_SERVE_DATABASE_URL; not with --data" },
  { flags: "--pool-size <n>", description: "connections to PostgreSQL per replica", default: "10" },
  { flags: "--fixtures <file>", description: "YAML file of edges, routes and backends to load into the first key's account" },
  { flags: "--api-key <key>", description: "an API key (repeatable; each key is its own account); or EDGEPLAN_SERVE_API_KEYS=K1,K2", repeat: true },
  { flags: "--public-url <url>", description: "base of every uri the server writes (default: http://HOST:PORT)" },
  { flags: "--sp-base <url>", description: "base of the generated SAML service-provider URLs", default: "https://idp.edgeplan.localhost" },
  { flags: "--version-header <name>", description: "name of the API version header", default: "Ngrok-Version" },
  { flags: "--rate-limit <n/duration>", description: "at most N requests per rolling window per key, e.g. 120/60s, or off (429 beyond); shared by replicas of one database" },
  { flags: "--max-inflight <n>", description: "at most N requests in flight per key, per replica (429 beyond)" },
  { flags: "--latency <ms>", description: "test fault: delay every request by MS or a random MIN-MAX milliseconds" },
  { flags: "--fail-rate <p>", description: "test fault: answer this fraction of requests 503 before doing anything" },
  { flags: "--drop-rate <p>", description: "test fault: commit this fraction of writes, then cut the connection before the answer" },
  { flags: "--fault-seed <n>", description: "test faults: draw them from this seed (0 to 4294967295), so a run's faults can be met again" },
  { flags: "--headers-timeout <duration>", description: "time allowed to receive request headers (milliseconds or e.g. 10s)", default: "10000" },
  { flags: "--request-timeout <duration>", description: "time allowed to receive a whole request (milliseconds or e.g. 30s)", default: "30000" },
  { flags: "--quiet", description: "no request log on stderr", default: false },
  { flags: "--log-format <format>", description: "format of every log line on stderr, each with its level", choices: ["json", "text"], default: "json" },
  {
    flags: "--log-level <level>",
    description: "least level of the lines written (probes are logged at debug)",
    choices: ["debug", "info", "warn", "error"],
    default: "info",
  },
  { flags: "--admin-listen <host:port>", description: "also serve /healthz, /readyz and /metrics (plain HTTP, no key) on this address, e.g. 127.0.0.1:9090" },
  { flags: "--metrics", description: "serve /metrics (Prometheus text, no key) on the API port too", default: false },
  { flags: "--tls-cert <file>", description: "serve HTTPS with this PEM certificate (chain); with --tls-key; SIGHUP reads both again" },
  { flags: "--tls-key <file>", description: "the PEM private key of --tls-cert" },
  { flags: "--drain-delay <duration>", description: "on SIGTERM, /readyz answers 503 at once and new connections are refused after this long (0: at once)", default: "5s" },
  { flags: "--drain-timeout <duration>", description: "on SIGTERM, time the requests in flight get to be answered before their connections are cut", default: "30s" },
];

/** A command that plans: its manifest paths argument, and the common options after its own. */
function planningCommand(program: Command, name: CommandName, description: string, pathsHelp: string, own: readonly OptionSpec[]): Command {
  const cmd = program.command(name).description(description).argument("[paths...]", pathsHelp);
  return addOptions(cmd, [...own, ...COMMON_OPTIONS], name);
}

function registerValidate(program: Command, done: Done): void {
  const cmd = program
    .command("validate")
    .description("check the project file and the manifests (syntax, fields, references, IdP metadata) without contacting the API")
    .argument("[paths...]", "manifest files or folders (default: the project file's paths, else .)");
  addOptions(cmd, [
    CONFIG_OPTION,
    ENV_OPTION,
    { flags: "--format <format>", description: "text (diagnostics on stderr) or json (one document on stdout)", choices: ["text", "json"], default: "text" },
    { flags: "--verbose", description: "also name the YAML files skipped because no document in them has a kind", default: false },
    { flags: "--all-envs", description: "validate once per environment of the project file (not with --env)", default: false },
  ]);
  cmd.action(async (paths: string[], flags: { verbose: boolean; config?: string; env?: string; format: string; allEnvs: boolean }) => {
    const { runValidate } = await import("./commands/validate.js");
    const given = { ...(flags.config !== undefined ? { config: flags.config } : {}), ...(flags.env !== undefined ? { envName: flags.env } : {}) };
    done(await runValidate(paths, { verbose: flags.verbose, format: flags.format, allEnvs: flags.allEnvs, ...given }));
  });
}

function registerPlan(program: Command, done: Done): void {
  const description = "show what would change to make the live side match the manifests";
  const cmd = planningCommand(program, "plan", description, "manifest files or folders; the manifest root (default: the project file's paths, else .)", [
    ...PLAN_ONLY_OPTIONS,
    ...PLAN_OPTIONS,
  ]);
  cmd.action(async (paths: string[], flags: Omit<import("./commands/plan.js").PlanCommandOptions, "paths">) => {
    const [{ runPlan }, { processIO }] = await Promise.all([import("./commands/plan.js"), import("./commands/io.js")]);
    done((await runPlan({ ...flags, paths, listWhileLoading: true }, processIO())).exitCode);
  });
}

function registerApply(program: Command, done: Done): void {
  const description = "make the live side match the manifests (or a saved plan): show the plan, ask, apply, check convergence";
  const cmd = planningCommand(program, "apply", description, "manifest files or folders; the manifest root (default: the project file's paths, else .)", [
    ...APPLY_ONLY_OPTIONS,
    ...PLAN_OPTIONS,
  ]);
  cmd.action(async (paths: string[], flags: Omit<import("./commands/apply.js").ApplyCommandOptions, "paths">) => {
    const [{ runApply }, { processIO }] = await Promise.all([import("./commands/apply.js"), import("./commands/io.js")]);
    done((await runApply({ ...flags, paths }, processIO())).exitCode);
  });
}

function registerExport(program: Command, done: Done): void {
  const description = "write manifests for the live objects: weighted backends, and the modules of HTTPS edge routes";
  const cmd = planningCommand(program, "export", description, "manifests whose EdgeRoute documents name the routes to export (default: every route)", EXPORT_OPTIONS);
  cmd.action(async (paths: string[], flags: Omit<import("./commands/export.js").ExportCommandOptions, "paths">) => {
    const [{ runExport }, { processIO }] = await Promise.all([import("./commands/export.js"), import("./commands/io.js")]);
    done((await runExport({ ...flags, paths }, processIO())).exitCode);
  });
}

function registerUnlock(program: Command, done: Done): void {
  const cmd = addOptions(
    program
      .command("unlock")
      .description("remove the lease a stopped apply left on a stack: shows its holder, then asks (or --lease-id ID, or --force)")
      .argument("<stack>", "the stack to unlock"),
    [...UNLOCK_OPTIONS, ...COMMON_OPTIONS],
    "unlock",
  );
  cmd.action(async (stack: string, flags: import("./commands/unlock.js").UnlockOptions) => {
    const [{ runUnlock }, { processIO }] = await Promise.all([import("./commands/unlock.js"), import("./commands/io.js")]);
    done(await runUnlock(stack, flags, processIO()));
  });
}

function registerState(program: Command, done: Done): void {
  const state = program.command("state").description("what a stack owns, and releasing an object from it without deleting it");
  const list = addOptions(
    state.command("list").description("list the weighted backends and route modules the stack owns, and its inventory and lease objects"),
    [{ flags: "--format <format>", description: "output format", choices: ["text", "json"], default: "text" }, ...COMMON_OPTIONS],
    "state",
  );
  list.action(async (flags: import("./api/options.js").CommonCliOptions & { format: string }) => {
    const [{ runStateList }, { processIO }] = await Promise.all([import("./commands/state.js"), import("./commands/io.js")]);
    done(await runStateList(flags, processIO()));
  });
  const release = addOptions(
    state
      .command("release")
      .description("stop managing an object without deleting it (a weighted backend loses its owner marker, a module its inventory entry)")
      .argument("<address>", "weighted_backend.NAME or edge_route.EDGE_ID/ROUTE_ID.saml|circuit_breaker"),
    COMMON_OPTIONS,
    "state",
  );
  release.action(async (address: string, flags: import("./api/options.js").CommonCliOptions) => {
    const [{ runStateRelease }, { processIO }] = await Promise.all([import("./commands/state.js"), import("./commands/io.js")]);
    done(await runStateRelease(address, flags, processIO()));
  });
}

function registerPolicy(program: Command, done: Done): void {
  const policy = program.command("policy").description("the project's policies: rules in CEL that guard every plan (docs/policies.md)");
  const test = addOptions(
    policy
      .command("test")
      .description("run the policy test cases of a folder against the project's policies; exit 1 when a case gives what it does not expect")
      .argument("[dir]", "folder of test cases (default: policies/tests)"),
    [CONFIG_OPTION, ENV_OPTION],
  );
  test.action(async (dir: string | undefined, flags: { config?: string; env?: string }) => {
    const [{ runPolicyTest }, { processIO }] = await Promise.all([import("./commands/policy-test.js"), import("./commands/io.js")]);
    done(await runPolicyTest(dir, flags, processIO()));
  });
}

/** `--manifests`: where `rollout status` and `rollout promote --full` read the manifests. */
const MANIFESTS_OPTION: OptionSpec = {
  flags: "--manifests <path>",
  description: "manifest file or folder (repeatable; default: the project file's paths, else .)",
  repeat: true,
};

/** The lease options of the rollout commands: each takes the stack's lease as apply does. */
const ROLLOUT_LOCK_OPTIONS: readonly OptionSpec[] = APPLY_ONLY_OPTIONS.filter((o) => o.flags.startsWith("--lock-"));

function registerRollout(program: Command, done: Done): void {
  const rollout = program.command("rollout").description("where progressive rollouts stand, and promote, abort or retry one without editing its manifest");
  type Flags = import("./commands/rollout.js").RolloutCommandOptions;
  const status = addOptions(
    rollout
      .command("status")
      .description("every rollout of the stack (or NAME's): step, weights now, final weights, next step due, paused or halted and why")
      .argument("[name]", "the weighted backend's name"),
    [{ flags: "--format <format>", description: "output format", choices: ["text", "json"], default: "text" }, MANIFESTS_OPTION, ...COMMON_OPTIONS],
    "rollout",
  );
  status.action(async (name: string | undefined, flags: Flags) => {
    const [{ runRolloutStatus }, { processIO }] = await Promise.all([import("./commands/rollout.js"), import("./commands/io.js")]);
    done(await runRolloutStatus(name, flags, processIO()));
  });
  const actions = [
    ["promote", "go on past the rollout's pause (or an inconclusive analysis): the next apply takes the next step with no gate before it"],
    ["abort", "write back the weights the rollout started from and halt it, until the manifest changes or rollout retry"],
    ["retry", "start a halted rollout again: the next apply takes its first step from the live weights"],
  ] as const;
  for (const [verb, description] of actions) {
    const own: OptionSpec[] =
      verb === "promote"
        ? [
            {
              flags: "--full",
              description: "straight to the manifest's weights in one write, ending the rollout (needs the manifests: they hold the target)",
              default: false,
            },
            MANIFESTS_OPTION,
          ]
        : [];
    const cmd = addOptions(
      rollout.command(verb).description(description).argument("<name>", "the weighted backend's name"),
      [...own, ...ROLLOUT_LOCK_OPTIONS, ...COMMON_OPTIONS],
      "rollout",
    );
    cmd.action(async (name: string, flags: Flags) => {
      const [commands, { processIO }] = await Promise.all([import("./commands/rollout.js"), import("./commands/io.js")]);
      const run = { promote: commands.runRolloutPromote, abort: commands.runRolloutAbort, retry: commands.runRolloutRetry }[verb];
      done(await run(name, flags, processIO()));
    });
  }
}

function registerDemo(program: Command, done: Done): void {
  program
    .command("demo")
    .description("plan, apply and plan again the bundled examples on an embedded local server (no account needed)")
    .action(async () => {
      const [{ runDemo }, { processIO }] = await Promise.all([import("./commands/demo.js"), import("./commands/io.js")]);
      done(await runDemo(processIO()));
    });
}

function registerSchema(program: Command, done: Done): void {
  program
    .command("schema")
    .description("write the JSON Schemas of the manifest kinds, of the project file and of the plan file")
    .option("--out <dir>", "folder to write them into", "schemas")
    .action(async (flags: { out: string }) => {
      const { runSchema } = await import("./commands/schema.js");
      done(await runSchema(flags.out));
    });
}

function registerServe(program: Command, done: Done): void {
  const cmd = program.command("serve").description("run the API server (docs/api.md) until SIGTERM or SIGINT; prints `listening on http://HOST:PORT` when ready");
  addOptions(cmd, SERVE_OPTIONS).action(async (flags: import("./commands/serve.js").ServeFlags) => {
    const { serveCommand } = await import("./commands/serve.js");
    done(await serveCommand(flags));
  });
}

function registerAgent(program: Command, done: Done): void {
  const agent = program
    .command("agent")
    .description("run the pull-based reconciler: fetch git sources, keep their stacks converged (docs/agent.md); prints `listening on http://HOST:PORT`")
    .option("--config <file>", "the agent's configuration (sources, stacks, notifications)")
    .option("--listen <host:port>", "address of its API, page and /metrics (default 127.0.0.1:9400; port 0 picks a free one)")
    .option("--data <file>", "SQLite file of its status and history (default: in memory)")
    .option("--database <url>", "PostgreSQL URL of its status and history, shared by replicas")
    .option("--token-file <file>", "bearer token that changes through its API need (and reads, off loopback)")
    .option("--cache <dir>", "folder of its git sources and commit snapshots (default .edgeplan-agent)")
    .option("--lock-ttl <duration>", "validity of a stack's lease without renewal (default 1m): a killed replica's stack is taken over after it")
    .option("--rate-limit <n/window>", "request budget of each API account, shared by its stacks")
    .option("--concurrency <n>", "requests in flight at once per account")
    .option("--retries <n>", "retries of one request")
    .option("--timeout <ms>", "timeout of one request");
  // Its options come before a subcommand: `agent status --token-file F` is the status command's (commander needs
  // the program's options positional too for that).
  program.enablePositionalOptions();
  agent.enablePositionalOptions();
  agent.action(async (flags: import("./commands/agent.js").AgentFlags) => {
    if (!flags.config) throw new EdgeplanError("agent: --config FILE is required (docs/agent.md shows one)");
    const [{ runAgent }, { processIO }] = await Promise.all([import("./commands/agent.js"), import("./commands/io.js")]);
    done(await runAgent(flags, processIO()));
  });
  const client: OptionSpec[] = [
    { flags: "--agent-url <url>", description: "the agent's API (default: $EDGEPLAN_AGENT_URL, else http://127.0.0.1:9400)" },
    { flags: "--token-file <file>", description: "the agent's bearer token (changes need it; reads off loopback too)" },
  ];
  type ClientFlags = import("./commands/agent.js").AgentClientFlags;
  addOptions(agent.command("status").description("every stack: ready, revision, drift, what waits; or one stack with its history").argument("[stack]", "a stack's name"), [
    { flags: "--format <format>", description: "output format", choices: ["text", "json"], default: "text" },
    ...client,
  ]).action(async (stack: string | undefined, flags: ClientFlags) => {
    const [{ runAgentStatus }, { processIO }] = await Promise.all([import("./commands/agent.js"), import("./commands/io.js")]);
    done(await runAgentStatus(stack, flags, processIO()));
  });
  addOptions(
    agent
      .command("ack")
      .description("acknowledge a risk of the plan a stack waits with, for that plan's digest")
      .argument("<stack>", "the stack")
      .argument("<rule>", "the risk or policy rule"),
    [
      { flags: "--digest <digest>", description: "the plan's digest, as `agent status` shows it (at least 12 characters)" },
      { flags: "--by <name>", description: "who acknowledges (default: $USER)" },
      ...client,
    ],
  ).action(async (stack: string, rule: string, flags: ClientFlags & { digest?: string; by?: string }) => {
    if (!flags.digest) throw new EdgeplanError(`agent ack: --digest is required: the plan's digest, as edgeplan agent status ${stack} shows it`);
    const [{ runAgentAck }, { processIO }] = await Promise.all([import("./commands/agent.js"), import("./commands/io.js")]);
    done(await runAgentAck(stack, rule, { ...flags, digest: flags.digest }, processIO()));
  });
  const verbs = [
    ["reconcile", "reconcile a stack now"],
    ["suspend", "leave a stack alone until resume (kept across restarts)"],
    ["resume", "reconcile a suspended stack again"],
  ] as const;
  for (const [verb, description] of verbs) {
    addOptions(agent.command(verb).description(description).argument("<stack>", "the stack"), client).action(async (stack: string, flags: ClientFlags) => {
      const [{ runAgentAction }, { processIO }] = await Promise.all([import("./commands/agent.js"), import("./commands/io.js")]);
      done(await runAgentAction(verb, stack, flags, processIO()));
    });
  }
}

function registerAction(program: Command, done: Done): void {
  program
    .command("action")
    .description("the GitHub Action entry: reads its inputs from INPUT_* variables and the GitHub context (see action.yml)")
    .action(async () => {
      const [{ runActionCommand }, { processIO }] = await Promise.all([import("./commands/action.js"), import("./commands/io.js")]);
      done(await runActionCommand(processIO()));
    });
}

function registerShow(program: Command, done: Done): void {
  const cmd = program
    .command("show")
    .description("render a saved plan (from `plan --out`) in any format, without contacting the API")
    .argument("<planfile>", "the saved plan");
  addOptions(cmd, [
    { flags: "--format <format>", description: "output format", choices: FORMAT_CHOICES, default: "text" },
    { flags: "--no-color", description: "no colour in text output" },
    { flags: "--config <file>", description: "project file whose policies judge the plan, instead of ./edgeplan.yaml" },
    { flags: "--env <name>", description: "the environment the plan was made in (refused when it is another)" },
  ]);
  cmd.action(async (file: string, flags: import("./commands/show.js").ShowCommandOptions) => {
    const [{ runShow }, { processIO }] = await Promise.all([import("./commands/show.js"), import("./commands/io.js")]);
    done(await runShow(file, flags, processIO()));
  });
}

function registerInit(program: Command, done: Done): void {
  const cmd = program.command("init").description("start a project: edgeplan.yaml, .edgeplan/ in .gitignore, and a first manifest (asks on a terminal)");
  addOptions(cmd, [
    { flags: "--stack <name>", description: "stack name for the project file (default: default)" },
    { flags: "--api-url <url>", description: "API base URL for the project file (default: none: EDGEPLAN_API_URL or --local)" },
    { flags: "--dir <dir>", description: "folder to start the project in", default: "." },
    { flags: "--yes", description: "ask nothing: take the flags and the defaults", default: false },
    { flags: "--force", description: "overwrite edgeplan.yaml and manifests/example.yaml when they exist", default: false },
  ]);
  cmd.action(async (flags: import("./commands/init.js").InitOptions) => {
    const [{ runInit }, { processIO }] = await Promise.all([import("./commands/init.js"), import("./commands/io.js")]);
    done(await runInit(flags, processIO()));
  });
}

function registerFmt(program: Command, done: Done): void {
  const cmd = program
    .command("fmt")
    .description("rewrite manifests in the canonical layout (comments kept); --check only lists the files that would change")
    .argument("[paths...]", "manifest files or folders (default: the project file's paths, else .)");
  addOptions(cmd, [
    CONFIG_OPTION,
    { flags: "--env <name>", description: "take the paths of this environment of the project file (or EDGEPLAN_ENV)" },
    { flags: "--check", description: "write nothing; exit 1 when a file is not formatted", default: false },
  ]);
  cmd.action(async (paths: string[], flags: { check: boolean; config?: string; env?: string }) => {
    const [{ runFmt }, { processIO }] = await Promise.all([import("./commands/fmt.js"), import("./commands/io.js")]);
    done(await runFmt({ paths, ...flags }, processIO()));
  });
}

function registerCompletion(program: Command, done: Done): void {
  program
    .command("completion")
    .description("print a shell completion script: edgeplan completion bash|zsh|fish (install lines in docs/commands.md)")
    .addArgument(new Argument("<shell>", "the shell the script is for").choices(["bash", "zsh", "fish"]))
    .action(async (shell: string) => {
      const [{ runCompletion }, { processIO }] = await Promise.all([import("./commands/completion.js"), import("./commands/io.js")]);
      done(runCompletion(program, shell, processIO()));
    });
}

/** Every command, in the order `edgeplan --help` lists them. */
const COMMANDS: ReadonlyArray<(program: Command, done: Done) => void> = [
  registerValidate,
  registerPlan,
  registerApply,
  registerShow,
  registerExport,
  registerInit,
  registerFmt,
  registerState,
  registerPolicy,
  registerRollout,
  registerUnlock,
  registerDemo,
  registerSchema,
  registerServe,
  registerAgent,
  registerAction,
  registerCompletion,
];

/**
 * After a mistyped command or option, commander's message (with its "Did you mean" where one is close) and one line
 * naming the help of the command that was meant, as kubectl does, rather than the whole help.
 */
function pointToHelp(cmd: Command, path: string): void {
  cmd.showHelpAfterError(`Run '${path} --help' for usage.`);
  for (const sub of cmd.commands) pointToHelp(sub, `${path} ${sub.name()}`);
}

async function main(argv: string[], outcome: CommandOutcome): Promise<number> {
  const program = new Command("edgeplan")
    .description("Plan and apply weighted backends and HTTPS edge route modules from YAML manifests")
    .version(pkg.version)
    .exitOverride();
  let exitCode: number = EXIT.ok;
  for (const register of COMMANDS) register(program, (code) => (exitCode = code));
  pointToHelp(program, "edgeplan");
  // `edgeplan rollout status`, as the message of a command that does not finish names it.
  program.hook("preAction", (_program, command) => {
    const names: string[] = [];
    for (let c: Command | null = command; c && c !== program; c = c.parent) names.unshift(c.name());
    outcome.running(`edgeplan ${names.join(" ")}`);
  });
  try {
    await program.parseAsync(argv);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "commander.helpDisplayed" || code === "commander.version" || code === "commander.help") return EXIT.ok;
    if (typeof code === "string" && code.startsWith("commander.")) return EXIT.error;
    throw err;
  }
  return exitCode;
}

// The one handler of errors and owner of the exit code (src/commands/outcome.ts): the message and exit code that
// `errorOutcome` gives an error, redacted as all output is, and exit 1, never 0, for a command that ends without
// reporting its outcome.
const outcome = guardOutcome(process, (message) => void process.stderr.write(redactorOfProcess().redact(`edgeplan: ${message}\n`)));
void outcome.settle(main(process.argv, outcome));
