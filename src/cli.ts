#!/usr/bin/env node
/**
 * The command-line adapter: parses flags with commander and hands them to `commands/`. Command modules are
 * imported lazily so that `edgeplan --version` stays fast. Every error ends here, in one handler.
 */
import { readFileSync } from "node:fs";
import { Command, Option } from "commander";
import { EdgeplanError, EXIT } from "./model/errors.js";

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

/** Options every command that talks to the API takes (DESIGN.md section 6). */
export function withCommonOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--api-url <url>", "API base URL").env("EDGEPLAN_API_URL"))
    .addOption(new Option("--api-key-file <file>", "read the API key from this file (else EDGEPLAN_API_KEY)"))
    .addOption(new Option("--stack <name>", "stack name kept in owner markers").env("EDGEPLAN_STACK").default("default"))
    .option("--takeover", "change objects that carry another stack's owner marker", false)
    .option("--local", "run against an embedded server with state in .edgeplan/local.db", false)
    .option("--fixtures <file>", "with --local: load edges, routes and backends from this fixtures file")
    .option("--concurrency <n>", "requests in flight at once", "4")
    .option("--rate-limit <n/window>", "client-side request budget, e.g. 120/60s, or off", "120/60s")
    .option("--retries <n>", "retries of a failed request", "5")
    .option("--timeout <ms>", "timeout of one request", "30000")
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
  void done;

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
