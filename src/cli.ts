#!/usr/bin/env node
/**
 * The command-line adapter: parses flags with commander and hands them to `commands/`. Command modules are
 * imported lazily so that `edgeplan --version` stays fast. Every error ends here, in one handler.
 */
import { readFileSync } from "node:fs";
import { Command, Option } from "commander";
import { EdgeplanError, EXIT } from "./model/errors.js";

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

/** Options every command that talks to the API takes (README, "Commands and exit codes"). */
export function withCommonOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--api-url <url>", "API base URL").env("EDGEPLAN_API_URL"))
    .addOption(new Option("--api-key-file <file>", "read the API key from this file (else EDGEPLAN_API_KEY)"))
    .addOption(new Option("--stack <name>", "stack name kept in owner markers").env("EDGEPLAN_STACK").default("default"))
    .option("--takeover", "change objects that carry another stack's owner marker", false)
    .option("--local", "run against an embedded server with state in .edgeplan/local.db", false)
    .option("--fixtures <file>", "with --local: load edges, routes and backends from this fixtures file")
    .option("--concurrency <n>", "requests in flight at once", "4")
    // No commander default: left out, the client's default applies (120/60s), and --local knows it was left out.
    .option("--rate-limit <n/duration>", "client-side request budget, e.g. 20/1s, or off (default: 120/60s; off with --local)")
    .option("--retries <n>", "retries of a failed request", "5")
    .option("--timeout <duration>", "timeout of one request: milliseconds or a duration such as 30s", "30000")
    .option("--version-header <name>", "name of the API version header", "Ngrok-Version")
    .option("--insecure-http", "allow plain http:// to a host that is not loopback", false)
    .option("--no-color", "no colour in text output")
    .option("--verbose", "log every request to stderr", false);
}

async function main(argv: string[]): Promise<number> {
  const program = new Command("edgeplan")
    .description("Plan and apply weighted backends and HTTPS edge route modules from YAML manifests")
    .version(pkg.version)
    .showHelpAfterError()
    .exitOverride();

  let exitCode: number = EXIT.ok;
  const done = (code: number): void => {
    exitCode = code;
  };

  // Commands register here; each lazily imports its module under ./commands/.
  program
    .command("validate")
    .description("check manifests (syntax, fields, references, IdP metadata) without contacting the API")
    .argument("[paths...]", "manifest files or folders (default: .)")
    .option("--verbose", "also name the YAML files skipped because no document in them has a kind", false)
    .action(async (paths: string[], flags: { verbose: boolean }) => {
      const { runValidate } = await import("./commands/validate.js");
      done(await runValidate(paths, { verbose: flags.verbose }));
    });
  withCommonOptions(
    program
      .command("plan")
      .description("show what would change to make the live side match the manifests")
      .argument("[paths...]", "manifest files or folders; the manifest root (default: .)")
      .addOption(new Option("--format <format>", "output format").choices(["text", "json", "markdown"]).default("text"))
      .option("--out <file>", "save the plan (JSON) for `apply --plan`")
      .option("--detailed-exitcode", "exit 2 when there are changes (0: none, 1: error)", false)
      .option("--prune", "delete owned objects that no manifest names (orphans)", false)
      .option("--max-shift <points>", "traffic-shift risk above this many percentage points", "50")
      .option("--max-deletes <n>", "mass-delete risk above this many deletes (default: 10 or 30% of the stack)"),
  ).action(async (paths: string[], flags: Omit<import("./commands/plan.js").PlanCommandOptions, "paths">) => {
    const [{ runPlan }, { processIO }] = await Promise.all([import("./commands/plan.js"), import("./commands/io.js")]);
    done((await runPlan({ ...flags, paths }, processIO())).exitCode);
  });
  withCommonOptions(
    program
      .command("apply")
      .description("make the live side match the manifests (or a saved plan): show the plan, ask, apply, check convergence")
      .argument("[paths...]", "manifest files or folders; the manifest root (default: .)")
      .option("--plan <file>", "apply this saved plan (from `plan --out`) instead of planning now")
      .option("--auto-approve", "apply without asking for 'yes'", false)
      .option("--prune", "delete owned objects that no manifest names (orphans)", false)
      .option(
        "--ack <rule>",
        "acknowledge a risk: auth-removal, traffic-shift, no-traffic, mass-delete (repeatable)",
        (v: string, all: string[]) => [...all, v],
        [] as string[],
      )
      .option("--force", "acknowledge every risk", false)
      .option("--refresh", "with --plan: when the saved plan is stale, plan again from the manifests and apply that", false)
      .option("--max-shift <points>", "traffic-shift risk above this many percentage points (default 50)")
      .option("--max-deletes <n>", "mass-delete risk above this many deletes (default: 10 or 30% of the stack)")
      .addOption(new Option("--format <format>", "how the plan and the report are shown").choices(["text", "json", "markdown"]).default("text")),
  ).action(async (paths: string[], flags: Omit<import("./commands/apply.js").ApplyCommandOptions, "paths">) => {
    const [{ runApply }, { processIO }] = await Promise.all([import("./commands/apply.js"), import("./commands/io.js")]);
    done((await runApply({ ...flags, paths }, processIO())).exitCode);
  });
  withCommonOptions(
    program
      .command("export")
      .description("write manifests for the live objects: weighted backends, and the modules of HTTPS edge routes")
      .argument("[paths...]", "manifests whose EdgeRoute documents name the routes to export (default: every route)")
      .option("--out <dir>", "folder to create; it must not exist or be empty", "exported")
      .option("--route <edge_id/route_id>", "export this route (repeatable)", (v: string, all: string[] | undefined) => [...(all ?? []), v]),
  ).action(async (paths: string[], flags: Omit<import("./commands/export.js").ExportCommandOptions, "paths">) => {
    const [{ runExport }, { processIO }] = await Promise.all([import("./commands/export.js"), import("./commands/io.js")]);
    done((await runExport({ ...flags, paths }, processIO())).exitCode);
  });
  program
    .command("demo")
    .description("plan, apply and plan again the bundled examples on an embedded local server (no account needed)")
    .action(async () => {
      const [{ runDemo }, { processIO }] = await Promise.all([import("./commands/demo.js"), import("./commands/io.js")]);
      done(await runDemo(processIO()));
    });
  program
    .command("schema")
    .description("write the JSON Schemas of the manifest kinds and of the plan file")
    .option("--out <dir>", "folder to write them into", "schemas")
    .action(async (flags: { out: string }) => {
      const { runSchema } = await import("./commands/schema.js");
      done(await runSchema(flags.out));
    });
  program
    .command("serve")
    .description("run the API server (docs/api.md) until SIGTERM or SIGINT; prints `listening on http://HOST:PORT` when ready")
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on; 0 picks a free one", "4780")
    .option("--data <file>", "SQLite file that keeps the state (default: in memory)")
    .option("--fixtures <file>", "YAML file of edges, routes and backends to load into the first key's account")
    .option("--api-key <key>", "an API key (repeatable; each key is its own account); or EDGEPLAN_SERVE_API_KEYS=K1,K2", (v: string, all: string[] | undefined) => [...(all ?? []), v])
    .option("--public-url <url>", "base of every uri the server writes (default: http://HOST:PORT)")
    .option("--sp-base <url>", "base of the generated SAML service-provider URLs", "https://idp.edgeplan.localhost")
    .option("--version-header <name>", "name of the API version header", "Ngrok-Version")
    .option("--rate-limit <n/duration>", "at most N requests per rolling window per key, e.g. 120/60s, or off (429 beyond)")
    .option("--max-inflight <n>", "at most N requests in flight per key (429 beyond)")
    .option("--latency <ms>", "test fault: delay every request by MS or a random MIN-MAX milliseconds")
    .option("--fail-rate <p>", "test fault: answer this fraction of requests 503 before doing anything")
    .option("--drop-rate <p>", "test fault: commit this fraction of writes, then cut the connection before the answer")
    .option("--fault-seed <n>", "test faults: draw them from this seed (0 to 4294967295), so a run's faults can be met again")
    .option("--headers-timeout <duration>", "time allowed to receive request headers (milliseconds or e.g. 10s)", "10000")
    .option("--request-timeout <duration>", "time allowed to receive a whole request (milliseconds or e.g. 30s)", "30000")
    .option("--quiet", "no request log on stderr", false)
    .action(async (flags: import("./commands/serve.js").ServeFlags) => {
      const { serveCommand } = await import("./commands/serve.js");
      done(await serveCommand(flags));
    });
  program
    .command("action")
    .description("the GitHub Action entry: reads its inputs from INPUT_* variables and the GitHub context (see action.yml)")
    .action(async () => {
      const [{ runActionCommand }, { processIO }] = await Promise.all([import("./commands/action.js"), import("./commands/io.js")]);
      done(await runActionCommand(processIO()));
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

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof EdgeplanError) {
      if (err.message) process.stderr.write(`edgeplan: ${err.message}\n`);
      process.exitCode = err.exitCode;
    } else {
      process.stderr.write(`edgeplan: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = EXIT.error;
    }
  },
);
