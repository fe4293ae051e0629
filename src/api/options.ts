/**
 * Client options: their type, and how the common command-line flags (src/cli.ts `COMMON_OPTIONS`) and the
 * environment become them. Every bad value is refused with a message naming the flag and what it accepts; the API
 * key is read here and never appears in any message.
 */
import { readFile } from "node:fs/promises";
import { EdgeplanError, fileErrorReason } from "../model/errors.js";
import type { Backoff } from "./retry.js";
import type { Clock } from "./rate-limit.js";
import type { Reachability } from "./reachability.js";
import type { ApiClock } from "./api-clock.js";
import type { ChosenEnvironment } from "../model/project-schema.js";
import { isLoopbackHost, SETTING_PARSERS, type RateLimit } from "../model/syntax.js";

export interface ClientOptions {
  /** Base URL of the API, e.g. `https://api.example.com` (a path prefix is kept). */
  baseUrl: string;
  apiKey: string;
  /** Requests in flight at once, and connections in the pool. */
  concurrency: number;
  /** Client-side request budget per rolling window; `null` for none. */
  rateLimit: RateLimit | null;
  /** Retries of one request after its first attempt. */
  retries: number;
  /** Timeout of one attempt, in ms. */
  timeoutMs: number;
  /** Name of the API version header (`Ngrok-Version`). */
  versionHeader: string;
  /** Allow plain `http://` to a host that is not loopback. */
  insecureHttp: boolean;
  /** Called with one line per request attempt (verbose mode). */
  log?: (line: string) => void;
  /** Retry backoff windows; DEFAULT_BACKOFF when absent. */
  backoff?: Backoff;
  /** Time source for the limiter and backoff waits (tests). */
  clock?: Clock;
  /** Told of every answer's `Date` header: the API's clock, by which rollout steps are timed (src/api/api-clock.ts). */
  apiClock?: ApiClock;
  /** Random source in [0, 1) for jitter (tests). */
  random?: () => number;
  /**
   * Told of every request that got an answer or none; once it takes the API as gone, the client sends nothing more
   * and the requests waiting to retry fail at once. Without it, every request retries on its own.
   */
  reachability?: Reachability;
  /**
   * Told of what the client starts waiting for (a request's answer, `METHOD /path`; the close of its connections);
   * the returned function when it ends. The outcome guard (src/commands/outcome.ts) names what was still waited for
   * when a command ends before it finished.
   */
  onPending?: (what: string) => () => void;
}

/** The common flags as commander hands them over (values are strings unless a caller passes numbers). */
export interface CommonCliOptions {
  /**
   * The project file to read instead of `edgeplan.yaml` in the working directory (src/commands/project.ts); false
   * reads none (the demo, which runs the bundled examples whatever folder it is started in).
   */
  config?: string | false;
  /** `--env NAME`: the project file's environment to run in (src/commands/project.ts). */
  env?: string;
  /** The environment chosen from the project file, once it is read: the plan names it, `${var.*}` reads its vars. */
  environment?: ChosenEnvironment | null;
  apiUrl?: string;
  /** Where `apiUrl` comes from, as a message names it (the Action's input); default: `--api-url` or EDGEPLAN_API_URL. */
  apiUrlSource?: string;
  apiKeyFile?: string;
  /** The environment variable holding the API key (the project file's `api_key_env`); default EDGEPLAN_API_KEY. */
  apiKeyEnv?: string;
  stack?: string;
  takeover?: boolean;
  local?: boolean;
  fixtures?: string;
  concurrency?: string | number;
  rateLimit?: string;
  retries?: string | number;
  timeout?: string | number;
  versionHeader?: string;
  insecureHttp?: boolean;
  color?: boolean;
  verbose?: boolean;
}

export const CLIENT_DEFAULTS = {
  concurrency: 4,
  rateLimit: "120/60s",
  retries: 5,
  timeoutMs: 30_000,
  versionHeader: "Ngrok-Version",
} as const;

function optionError(message: string): EdgeplanError {
  return new EdgeplanError(message);
}

/** An HTTP header name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Checks and normalises an API base URL: http or https, no credentials, query or fragment; plain `http://` only to
 * a loopback host unless `insecureHttp`. Returns the URL without a trailing slash.
 */
export function checkBaseUrl(value: string, insecureHttp: boolean, flag = "--api-url"): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw optionError(`${flag}: "${value}" is not a URL; expected e.g. https://api.example.com or http://127.0.0.1:4780`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw optionError(`${flag}: only http and https are supported, got "${url.protocol.replace(/:$/, "")}"`);
  }
  if (url.username || url.password) {
    throw optionError(`${flag}: credentials in the URL are not accepted; put the key in EDGEPLAN_API_KEY or --api-key-file`);
  }
  if (url.search || url.hash) {
    throw optionError(`${flag}: the base URL must not have a query or fragment, got "${url.origin}${url.pathname}${url.search}${url.hash}"`);
  }
  if (url.protocol === "http:" && !insecureHttp && !isLoopbackHost(url.hostname)) {
    throw optionError(
      `${flag}: refusing plain http:// to ${url.host}: the API key would travel unencrypted; use https://, ` +
        `or pass --insecure-http if this network is trusted (plain http is allowed to loopback hosts only)`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** A base URL as compared: origin and path without a trailing slash; the text itself when it is no URL. */
function sameApi(a: string, b: string): boolean {
  const norm = (text: string): string => {
    try {
      const url = new URL(text.trim());
      return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
    } catch {
      return text.trim();
    }
  };
  return norm(a) === norm(b);
}

/**
 * Refuses an API URL that differs from the chosen environment's `api_url`: the environment decides the key, the
 * stack and the policies, and a plan "for staging" must not write to another API. The same URL, or an environment
 * without `api_url`, is fine. `given` names where the URL came from.
 */
function refuseOtherApi(baseUrl: string, cli: CommonCliOptions, given: string): void {
  const environment = cli.environment;
  if (!environment?.apiUrl || sameApi(baseUrl, environment.apiUrl)) return;
  throw optionError(
    `${given} ${baseUrl} differs from the api_url of environment ${environment.name}, ${environment.apiUrl}; nothing was sent. ` +
      `The key, stack and policies are the environment's: make the two the same, or choose the environment of ${baseUrl} with --env NAME`,
  );
}

/** Characters that may appear in a bearer credential sent in a header: visible ASCII, no spaces. */
const KEY_CHARS = /^[\x21-\x7e]+$/;

/**
 * Reads the API key: `--api-key-file` when given, else the variable `keyVariable` names (EDGEPLAN_API_KEY unless the
 * project file's `api_key_env` names another). A variable named by `api_key_env` is never replaced by
 * EDGEPLAN_API_KEY: that could be another environment's key. The key is never part of a message.
 */
export async function loadApiKey(apiKeyFile: string | undefined, env: NodeJS.ProcessEnv, keyVariable = "EDGEPLAN_API_KEY"): Promise<string> {
  let key: string;
  let source: string;
  const variable = env[keyVariable];
  if (apiKeyFile !== undefined && apiKeyFile !== "") {
    source = `--api-key-file ${apiKeyFile}`;
    try {
      key = await readFile(apiKeyFile, "utf8");
    } catch (err) {
      const why = fileErrorReason(err);
      throw optionError(`${source}: cannot read the API key file (${why})`);
    }
  } else if (variable !== undefined && variable.trim() !== "") {
    source = keyVariable;
    key = variable;
  } else {
    const named = keyVariable === "EDGEPLAN_API_KEY" ? "" : " (the project file's api_key_env)";
    throw optionError(
      variable !== undefined
        ? `${keyVariable}${named} is set but empty; set it to the API key, or pass --api-key-file FILE`
        : `no API key: set ${keyVariable}${named}, or pass --api-key-file FILE (a file holding the key)`,
    );
  }
  key = key.trim();
  if (key === "") throw optionError(`${source}: the API key file is empty`);
  if (!KEY_CHARS.test(key)) {
    throw optionError(`${source}: the API key contains spaces, control or non-ASCII characters, which cannot be sent in a header`);
  }
  return key;
}

/**
 * Turns the common flags (`--api-url`, `--api-key-file`, `--concurrency`, `--rate-limit`, `--retries`, `--timeout`,
 * `--version-header`, `--insecure-http`, `--verbose`) and the environment (EDGEPLAN_API_URL, EDGEPLAN_API_KEY) into
 * client options. Throws an EdgeplanError naming the flag for every bad value. With `--verbose`, request lines go to
 * stderr. `overrides` supplies the URL and key of an embedded server (`--local`), skipping their lookup.
 */
export async function clientOptionsFrom(cli: CommonCliOptions, env: NodeJS.ProcessEnv, overrides?: { baseUrl: string; apiKey: string }): Promise<ClientOptions> {
  const insecureHttp = cli.insecureHttp === true;
  const concurrency = SETTING_PARSERS.concurrency(cli.concurrency ?? CLIENT_DEFAULTS.concurrency);
  const rateLimit = SETTING_PARSERS.rateLimit(cli.rateLimit ?? CLIENT_DEFAULTS.rateLimit);
  const retries = SETTING_PARSERS.retries(cli.retries ?? CLIENT_DEFAULTS.retries);
  const timeoutMs = SETTING_PARSERS.timeout(cli.timeout ?? CLIENT_DEFAULTS.timeoutMs);
  const versionHeader = (cli.versionHeader ?? CLIENT_DEFAULTS.versionHeader).trim();
  if (!TOKEN.test(versionHeader)) {
    throw optionError(`--version-header: "${versionHeader}" is not a valid header name (letters, digits and - only, e.g. Ngrok-Version)`);
  }

  let baseUrl: string;
  let apiKey: string;
  if (overrides) {
    baseUrl = checkBaseUrl(overrides.baseUrl, insecureHttp);
    apiKey = overrides.apiKey;
  } else {
    const url = cli.apiUrl ?? env.EDGEPLAN_API_URL;
    if (url === undefined || url.trim() === "") {
      throw optionError("no API URL: pass --api-url URL or set EDGEPLAN_API_URL (or use --local for an embedded server)");
    }
    baseUrl = checkBaseUrl(url, insecureHttp);
    refuseOtherApi(baseUrl, cli, cli.apiUrlSource ?? (url === env.EDGEPLAN_API_URL ? "EDGEPLAN_API_URL" : "--api-url"));
    apiKey = await loadApiKey(cli.apiKeyFile, env, cli.apiKeyEnv);
  }

  const options: ClientOptions = { baseUrl, apiKey, concurrency, rateLimit, retries, timeoutMs, versionHeader, insecureHttp };
  if (cli.verbose === true) options.log = (line) => process.stderr.write(`edgeplan: ${line}\n`);
  return options;
}
