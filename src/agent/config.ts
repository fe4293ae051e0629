/**
 * Reading the agent's configuration (docs/agent.md): the one YAML reader with positions, the schema
 * (src/model/agent-config-schema.ts), then each value's own syntax and the rules between entries. Every problem is a
 * diagnostic at `file:line:col`; any of them refuses the start, all of them listed at once.
 */
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { ACTIONS_BOT } from "../action/github.js";
import { checkBaseUrl } from "../api/options.js";
import { checkAgainstSchema } from "../manifest/check-document.js";
import { decodeManifest, parseOneDocument, Pinner, type ParsedDocument } from "../manifest/yaml-source.js";
import { AgentConfigSchema, type AgentConfigFile } from "../model/agent-config-schema.js";
import { AGENT_EVENTS, type AgentConfig, type AgentNotification, type AgentSource, type AgentStack, type SecretRef } from "../model/agent.js";
import { EdgeplanError, fileErrorReason, formatDiagnostic, sortDiagnostics, type Diagnostic } from "../model/errors.js";
import { didYouMean } from "../model/suggest.js";
import { isLoopbackHost, parseDuration } from "../model/syntax.js";

/** The configuration could not be used: every problem, each at its line. */
export class AgentConfigError extends EdgeplanError {
  override name = "AgentConfigError";
  constructor(readonly diagnostics: Diagnostic[]) {
    super(
      `${diagnostics.map(formatDiagnostic).join("\n")}\n${diagnostics.length} ${diagnostics.length === 1 ? "problem" : "problems"} in the agent's configuration; the agent did not start`,
    );
  }
}

/** Keys that would put a secret in the file, and what to write instead. */
const SECRET_KEYS: Record<string, string> = {
  password: "write no password here: use password_file or password_env",
  api_key: "write no API key here: use api_key_file or api_key_env",
  token: "write no token here: use token_file or token_env",
  secret: "write no secret here: use secret_file or secret_env",
};

/** Reads and checks the configuration `file` (relative to `cwd`). */
export async function loadAgentConfig(file: string, cwd: string): Promise<AgentConfig> {
  const absolute = path.resolve(cwd, file);
  let bytes: Uint8Array;
  try {
    if (!(await stat(absolute)).isFile()) throw Object.assign(new Error("not a regular file"), { code: "not a regular file" });
    bytes = await readFile(absolute);
  } catch (err) {
    throw new EdgeplanError(`--config ${file}: cannot read the agent's configuration (${fileErrorReason(err)})`);
  }
  const shown = path.relative(cwd, absolute) || file;
  const decoded = decodeManifest(bytes, shown);
  if ("diagnostic" in decoded) throw new AgentConfigError([decoded.diagnostic]);
  const read = parseOneDocument(decoded.text, shown, "the agent's configuration holds one document; remove this one");
  if ("errors" in read) throw new AgentConfigError(read.errors);
  if (read.doc === null) throw new EdgeplanError(`--config ${file}: the file is empty; docs/agent.md shows a configuration`);
  const diagnostics = refuseSecrets(read.value, read.doc);
  const checked = checkAgainstSchema(AgentConfigSchema, read.doc, read.value);
  diagnostics.push(...checked.diagnostics);
  if (!checked.data || diagnostics.length > 0) throw new AgentConfigError(sortDiagnostics(diagnostics));
  const built = buildConfig(checked.data, new Pinner(read.doc), path.dirname(absolute), shown);
  if (built.diagnostics.length > 0) throw new AgentConfigError(sortDiagnostics(built.diagnostics));
  return built.config;
}

/** A key that would hold a secret as text, anywhere in the file: an error at it, and the key dropped (told once). */
function refuseSecrets(value: unknown, doc: ParsedDocument): Diagnostic[] {
  const pin = new Pinner(doc);
  const out: Diagnostic[] = [];
  const walk = (node: unknown, at: PropertyKey[]): void => {
    if (Array.isArray(node)) {
      for (const [i, v] of node.entries()) walk(v, [...at, i]);
    } else if (node !== null && typeof node === "object") {
      for (const [key, v] of Object.entries(node)) {
        if (Object.hasOwn(SECRET_KEYS, key)) {
          out.push({ severity: "error", pos: pin.key([...at, key]), message: `${key}: ${SECRET_KEYS[key]}` });
          delete (node as Record<string, unknown>)[key];
        } else walk(v, [...at, key]);
      }
    }
  };
  walk(value, []);
  return out;
}

/** The file as an AgentConfig: durations parsed, paths made absolute, references checked. */
function buildConfig(file: AgentConfigFile, pin: Pinner, dir: string, shown: string): { config: AgentConfig; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const problem = (at: PropertyKey[], message: string): void => void diagnostics.push({ severity: "error", pos: pin.value(at), message });
  const ms = (at: PropertyKey[], text: string | undefined, fallback: string): number => {
    const v = parseDuration(text ?? fallback);
    if (v === undefined || v < 1000) problem(at, `${String(at.at(-1))}: expected a duration of at least 1s (30s, 5m, 1h), got "${text}"`);
    return v ?? 0;
  };
  const abs = (p: string): string => path.resolve(dir, p);
  const secret = (f: string | undefined, e: string | undefined): SecretRef | undefined => (f ? { file: abs(f) } : e ? { env: e } : undefined);
  const unique = (names: string[], what: string, list: string): void => {
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i) problem([list, i, "name"], `${what} ${n} is defined twice; names must be unique`);
    });
  };
  unique(
    file.sources.map((s) => s.name),
    "source",
    "sources",
  );
  unique(
    file.stacks.map((s) => s.name),
    "stack",
    "stacks",
  );
  const sources = file.sources.map((s, i): AgentSource => buildSource(s, ["sources", i], { problem, ms, abs, secret }));
  const sourceNames = sources.map((s) => s.name);
  const stacks = file.stacks.map((s, i): AgentStack => {
    const at = ["stacks", i];
    if (!sourceNames.includes(s.source))
      problem([...at, "source"], `source: no source ${s.source}; the sources are ${sourceNames.join(", ")}${didYouMean(s.source, sourceNames, "")}`);
    const folder = s.path ?? ".";
    if (path.isAbsolute(folder) || folder.split(/[\\/]/).includes("..")) problem([...at, "path"], "path: a folder inside the repository, without .. (e.g. prod)");
    if (s.api_url !== undefined) tryCheck(() => checkBaseUrl(s.api_url as string, false, "api_url"), [...at, "api_url"], problem);
    const stack: AgentStack = {
      name: s.name,
      source: s.source,
      path: path.posix.normalize(folder.replace(/\\/g, "/")),
      intervalMs: ms([...at, "interval"], s.interval, "5m"),
      retryIntervalMs: ms([...at, "retry_interval"], s.retry_interval, "30s"),
      maxRetryIntervalMs: ms([...at, "max_retry_interval"], s.max_retry_interval, "10m"),
      mode: s.mode ?? "correct",
      prune: s.prune ?? false,
      suspend: s.suspend ?? false,
    };
    if (s.env !== undefined) stack.env = s.env;
    if (s.api_url !== undefined) stack.apiUrl = s.api_url;
    const key = secret(s.api_key_file, s.api_key_env);
    if (key) stack.apiKey = key;
    return stack;
  });
  const stackNames = stacks.map((s) => s.name);
  const notifications = (file.notifications ?? []).map((n, i) => buildNotification(n, ["notifications", i], stackNames, { problem, secret }));
  return { config: { file: shown, sources, stacks, notifications, historyLimit: file.history ?? 20 }, diagnostics };
}

interface Helpers {
  problem(at: PropertyKey[], message: string): void;
  ms(at: PropertyKey[], text: string | undefined, fallback: string): number;
  abs(p: string): string;
  secret(f: string | undefined, e: string | undefined): SecretRef | undefined;
}

function buildSource(s: AgentConfigFile["sources"][number], at: PropertyKey[], h: Helpers): AgentSource {
  const ref = s.ref ?? "main";
  if (ref.startsWith("-") || /\.\.|[\s:~^?*[\\]/.test(ref)) h.problem([...at, "ref"], `ref: "${ref}" is not a branch or tag name`);
  const remote = /^(https|ssh|file):\/\//.test(s.url);
  if (!remote && /^[a-z][a-z0-9+.-]*:/i.test(s.url)) h.problem([...at, "url"], "url: https://, ssh://, file:// or a path");
  if (/^[a-z]+:\/\/[^/]*@/i.test(s.url) && s.url.split("@")[0]?.includes(":", 8))
    h.problem([...at, "url"], "url: write no password in the URL: use password_file or password_env");
  const https = s.url.startsWith("https://");
  if ((s.password_file || s.password_env || s.username) && !https) h.problem([...at, "username"], "username, password_file and password_env are for https:// URLs only");
  if ((s.ssh_key_file || s.known_hosts_file) && !s.url.startsWith("ssh://")) h.problem([...at, "ssh_key_file"], "ssh_key_file and known_hosts_file are for ssh:// URLs only");
  const source: AgentSource = {
    name: s.name,
    url: remote ? s.url : h.abs(s.url),
    ref,
    intervalMs: h.ms([...at, "interval"], s.interval, "1m"),
    timeoutMs: h.ms([...at, "timeout"], s.timeout, "60s"),
  };
  if (s.username) source.username = s.username;
  const password = h.secret(s.password_file, s.password_env);
  if (password) source.password = password;
  if (s.ssh_key_file) source.sshKeyFile = h.abs(s.ssh_key_file);
  if (s.known_hosts_file) source.knownHostsFile = h.abs(s.known_hosts_file);
  if (s.verify) source.allowedSignersFile = h.abs(s.verify.allowed_signers_file);
  const hook = h.secret(s.webhook?.secret_file, s.webhook?.secret_env);
  if (s.webhook && !hook) h.problem([...at, "webhook"], "webhook: give secret_file or secret_env");
  if (hook) source.webhookSecret = hook;
  if (s.pull_requests) {
    const pr = s.pull_requests;
    const token = h.secret(pr.token_file, pr.token_env);
    if (!token) h.problem([...at, "pull_requests"], "pull_requests: give token_file or token_env");
    const apiUrl = pr.api_url ?? "https://api.github.com";
    if (!sendableUrl(apiUrl)) h.problem([...at, "pull_requests", "api_url"], "api_url: an https:// URL (plain http:// only to a loopback host)");
    source.pullRequests = { repository: pr.repository, apiUrl, token: token ?? { env: "" }, commentAuthor: pr.comment_author ?? ACTIONS_BOT };
  }
  return source;
}

function buildNotification(
  n: NonNullable<AgentConfigFile["notifications"]>[number],
  at: PropertyKey[],
  stacks: string[],
  h: Pick<Helpers, "problem" | "secret">,
): AgentNotification {
  const out: AgentNotification = { name: n.name, type: n.type, url: n.url ?? "", events: n.events ?? [...AGENT_EVENTS] };
  for (const [i, s] of (n.stacks ?? []).entries()) {
    if (!stacks.includes(s)) h.problem([...at, "stacks", i], `stacks: no stack ${s}${didYouMean(s, stacks, "")}`);
  }
  if (n.stacks) out.stacks = n.stacks;
  if (n.type === "github") {
    const token = h.secret(n.token_file, n.token_env);
    if (!token || !n.repository) h.problem(at, "a github notification needs token_file (or token_env) and repository: owner/name");
    if (token) out.token = token;
    if (n.repository) out.repository = n.repository;
  } else if (n.type === "slack") {
    const url = h.secret(n.url_file, n.url_env);
    if (!url && !n.url) h.problem(at, "a slack notification needs url, url_file or url_env");
    if (url) out.secret = url;
  } else {
    if (!n.url) h.problem(at, "a webhook notification needs url");
    const secret = h.secret(n.secret_file, n.secret_env);
    if (secret) out.secret = secret;
  }
  if (out.url && !sendableUrl(out.url)) h.problem([...at, "url"], "url: an https:// URL (plain http:// only to a loopback host)");
  return out;
}

/** https, or http to loopback: what a notification is sent to (the webhook's secret and token travel with it). */
function sendableUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname));
  } catch {
    return false;
  }
}

function tryCheck(check: () => unknown, at: PropertyKey[], problem: Helpers["problem"]): void {
  try {
    check();
  } catch (err) {
    if (!(err instanceof EdgeplanError)) throw err;
    problem(at, err.message);
  }
}
