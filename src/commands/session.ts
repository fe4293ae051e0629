/**
 * What plan, apply and export share: loading the manifests (every diagnostic printed, nothing sent when one is an
 * error) and opening a client, either to the API named by `--api-url` or, with `--local`, to an embedded server
 * whose state lives in `.edgeplan/local.db`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { apiIdentity, type ApiIdentity } from "../api/account.js";
import { createClient, type ApiClient } from "../api/client.js";
import { Reachability } from "../api/reachability.js";
import { ApiClock } from "../api/api-clock.js";
import { clientOptionsFrom, type ClientOptions, type CommonCliOptions } from "../api/options.js";
import type { ApplyBudget } from "../core/estimate.js";
import type { LoadResult } from "../manifest/load.js";
import { ManifestError } from "../model/errors.js";
import { learnSentValues } from "../model/redact.js";
import type { ChosenEnvironment } from "../model/project-schema.js";
import type { DesiredState } from "../model/state.js";
import { isBackendId, ID_PREFIX } from "../model/wire.js";
import type { ProvisionNeeds } from "../server/index.js";
import { reportDiagnostics, type CommandIO } from "./io.js";
import { waitingFor } from "./outcome.js";

/** The account key of the embedded `--local` server. It guards nothing: the server listens on loopback only. */
const LOCAL_API_KEY = "edgeplan-local";
export const LOCAL_STATE_DIR = ".edgeplan";
export const LOCAL_DB = "local.db";

/**
 * Loads the manifests under `paths` (default `.`), with `${var.*}` from `vars`, the chosen environment. Prints the
 * diagnostics; when any is an error, says that nothing was sent (but `listed`, the listings that `plan` starts
 * while the manifests load) and throws a ManifestError carrying them, so no command acts on invalid manifests.
 */
export async function loadManifests(paths: string[], io: CommandIO, vars: ChosenEnvironment | null, listed?: string): Promise<LoadResult> {
  // Imported here, not above: `plan` opens its session and starts its listings before the loader is needed.
  const { loadDesired } = await import("../manifest/load.js");
  const result = await loadDesired(paths.length > 0 ? paths : ["."], { env: io.env, cwd: io.cwd, vars });
  // What reaches a header or a URL query is hidden from every output from now on, whatever prints it.
  if (io.redactor) learnSentValues(io.redactor, result.desired, io.env);
  if (!reportDiagnostics(io, result.diagnostics)) {
    const errors = result.diagnostics.filter((d) => d.severity === "error").length;
    const sent = listed ? `nothing was sent to the API but ${listed}` : "nothing was sent to the API";
    throw new ManifestError(result.diagnostics, `${errors} error${errors === 1 ? "" : "s"} in the manifests; ${sent}`);
  }
  return result;
}

export interface Session {
  client: ApiClient;
  /** The stack whose owner markers this run manages. */
  stack: string;
  /** Requests in flight at once (`--concurrency`), as the client was given them. */
  concurrency: number;
  /** The client's rate limit and concurrency, which the plan's estimate follows. */
  budget: ApplyBudget;
  /** Whether the API still answers: its `gone` aborts after a few requests in a row got no answer (src/api/reachability.ts). */
  reachability: Reachability;
  /** The API's clock, from the `Date` of its answers: rollout steps are timed by it, not by this machine's. */
  clock: ApiClock;
  /** The API and account the client talks to, as a saved plan records them (the key itself is not kept). */
  api: ApiIdentity;
  /** Closes the client, and the embedded server of `--local`. */
  close(): Promise<void>;
}

/**
 * Creates the folder of `--local`'s state when missing, with a `.gitignore` of `*` in it: git then ignores the folder
 * (the database and the `.gitignore` itself) without a line in the project's own `.gitignore`. A folder that exists
 * is left as it is.
 */
function createLocalDir(dir: string): void {
  if (mkdirSync(dir, { recursive: true }) === undefined) return;
  writeFileSync(join(dir, ".gitignore"), "*\n", { flag: "wx" });
}

/**
 * Opens a client from the common flags. With `--local`, starts an embedded server on a free loopback port with its
 * state in `<cwd>/.edgeplan/local.db` (or `$EDGEPLAN_LOCAL_DIR/local.db`), loads `--fixtures` when given, and otherwise provisions the edges, routes and
 * child backends that `desired` names (saying so on stderr), so that a preview needs no account and no setup.
 */
export async function openSession(options: CommonCliOptions, io: CommandIO, desired?: DesiredState): Promise<Session> {
  const stack = options.stack ?? io.env.EDGEPLAN_STACK ?? "default";
  if (!options.local) {
    const reachability = new Reachability();
    const clock = new ApiClock();
    const clientOptions = withLog({ ...(await clientOptionsFrom(options, io.env as NodeJS.ProcessEnv)), reachability, apiClock: clock, onPending: waitingFor }, io);
    const client = createClient(clientOptions);
    const api = apiIdentity(client.baseUrl, clientOptions.apiKey);
    return { client, stack, concurrency: clientOptions.concurrency, budget: budgetOf(clientOptions), reachability, clock, api, close: () => client.close() };
  }

  const { startServer, loadFixturesFile, provisionServer } = await import("../server/index.js");
  // EDGEPLAN_LOCAL_DIR moves the state (the demo uses a fresh folder so that it always starts from nothing).
  const dir = resolve(io.cwd, io.env.EDGEPLAN_LOCAL_DIR || LOCAL_STATE_DIR);
  createLocalDir(dir);
  const server = await startServer({
    host: "127.0.0.1",
    port: 0,
    dataFile: join(dir, LOCAL_DB),
    apiKeys: [LOCAL_API_KEY],
    ...(options.fixtures ? { fixtures: loadFixturesFile(resolve(io.cwd, options.fixtures)) } : {}),
  });
  try {
    if (!options.fixtures && desired) {
      const made = await provisionServer(server, needsOf(desired));
      if (made.length > 0) io.stderr(`local: provisioned ${made.join(", ")} (named by the manifests; pass --fixtures FILE to choose them)\n`);
    }
    const shown = relative(resolve(io.cwd), join(dir, LOCAL_DB));
    io.stderr(`local: embedded server with its state in ${shown.startsWith("..") ? join(dir, LOCAL_DB) : shown}\n`);
    // The embedded server has no rate limit: the client's default budget (that of the retired public API) would
    // only slow a local preview down. An explicit --rate-limit is kept.
    const rateLimit = options.rateLimit ?? "off";
    const reachability = new Reachability();
    const clock = new ApiClock();
    const clientOptions = withLog(
      {
        ...(await clientOptionsFrom({ ...options, rateLimit }, io.env as NodeJS.ProcessEnv, { baseUrl: server.url, apiKey: LOCAL_API_KEY })),
        reachability,
        apiClock: clock,
        onPending: waitingFor,
      },
      io,
    );
    const client = createClient(clientOptions);
    return {
      client,
      stack,
      reachability,
      clock,
      concurrency: clientOptions.concurrency,
      budget: budgetOf(clientOptions),
      // The embedded server listens on a new port at each run: its state file is what stays the same.
      api: apiIdentity(`local:${join(dir, LOCAL_DB)}`, LOCAL_API_KEY),
      close: async () => {
        await client.close();
        await server.close();
      },
    };
  } catch (err) {
    await server.close();
    throw err;
  }
}

/** `--verbose` request lines go to the command's stderr, and so through its redactor, as all its output does. */
function withLog<T extends ClientOptions>(options: T, io: CommandIO): T {
  return options.log ? { ...options, log: (line: string) => io.stderr(`edgeplan: ${line}\n`) } : options;
}

function budgetOf(options: ClientOptions): ApplyBudget {
  return { rateLimit: options.rateLimit, concurrency: options.concurrency };
}

/** What the manifests need to exist on the embedded server: the routes they name and the child backends they use. */
function needsOf(desired: DesiredState): ProvisionNeeds {
  const backends: string[] = [];
  for (const wb of desired.weightedBackends) {
    for (const key of Object.keys(wb.backends)) {
      if (isBackendId(key) && !key.startsWith(`${ID_PREFIX.weightedBackend}_`)) backends.push(key);
    }
  }
  return { routes: desired.edgeRoutes.map((r) => ({ edge: r.edge, route: r.route })), backends };
}
