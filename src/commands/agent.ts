/**
 * `edgeplan agent`: runs the pull-based reconciler (docs/agent.md) until SIGTERM or SIGINT, then drains: no new
 * fetch or reconciliation, the writes in flight finish, leases are given back, exit 0. Prints `listening on
 * http://HOST:PORT` on stdout when its listener is ready; one line per event on stderr (never a secret).
 * `edgeplan agent status|ack|reconcile|suspend|resume` ask a running agent through its API.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { Agent } from "../agent/agent.js";
import { loadAgentConfig } from "../agent/config.js";
import { startAgentListener } from "../agent/http.js";
import { AgentMetrics } from "../agent/metrics.js";
import { Notifier } from "../agent/notify.js";
import { openAgentStore } from "../agent/store.js";
import type { CommonCliOptions } from "../api/options.js";
import type { HistoryEntry, StackStatus } from "../model/agent.js";
import { EdgeplanError, EXIT, fileErrorReason } from "../model/errors.js";
import { parseListenAddress } from "../model/syntax.js";
import { urlHost } from "../server/listen.js";
import { waitForSignal } from "./serve.js";
import { renderAgentIndex, renderAgentStack } from "../render/agent-page.js";
import { renderAgentStackText, renderAgentStatusTable } from "../render/agent-status.js";
import { agentRequest } from "./agent-client.js";
import type { CommandIO } from "./io.js";

/** Where the agent keeps its git sources and commit snapshots by default (relative to the working directory). */
export const DEFAULT_AGENT_CACHE = ".edgeplan-agent";

/** The default `--listen`: loopback, where reads need no token. */
export const DEFAULT_AGENT_LISTEN = "127.0.0.1:9400";

export interface AgentFlags extends Pick<CommonCliOptions, "concurrency" | "rateLimit" | "retries" | "timeout"> {
  config: string;
  listen?: string;
  data?: string;
  database?: string;
  tokenFile?: string;
  cache?: string;
  lockTtl?: string;
}

/** Runs the agent until `stop` resolves (default: the first SIGTERM or SIGINT). */
export async function runAgent(flags: AgentFlags, io: CommandIO, stop: Promise<unknown> = waitForSignal()): Promise<number> {
  const listen = parseListenAddress("--listen", flags.listen ?? DEFAULT_AGENT_LISTEN);
  if (flags.data && flags.database) throw new EdgeplanError("--data and --database: choose one (a SQLite file for one agent, PostgreSQL for replicas)");
  const config = await loadAgentConfig(flags.config, io.cwd);
  const token = flags.tokenFile ? await readToken(resolve(io.cwd, flags.tokenFile)) : null;
  const store = await openAgentStore({ ...(flags.data ? { data: resolve(io.cwd, flags.data) } : {}), ...(flags.database ? { database: flags.database } : {}) });
  const log = (line: string): void => io.stderr(`${new Date().toISOString()} ${line}\n`);
  const metrics = new AgentMetrics();
  const notifier = new Notifier(config.notifications, { env: io.env, store, log });
  const agent = new Agent(config, {
    store,
    metrics,
    notifier,
    cacheDir: resolve(io.cwd, flags.cache ?? DEFAULT_AGENT_CACHE),
    env: io.env,
    log,
    clientFlags: { concurrency: flags.concurrency, rateLimit: flags.rateLimit, retries: flags.retries, timeout: flags.timeout },
    ...(flags.lockTtl ? { lockTtl: flags.lockTtl } : {}),
  });
  const listener = await startAgentListener({
    listen: `${urlHost(listen.host)}:${listen.port}`,
    token,
    control: agent,
    metrics,
    log: (line) => io.stderr(`${line}\n`),
    logFormat: "text",
    renderIndex: (stacks) => renderAgentIndex(stacks, { now: new Date().toISOString() }),
    renderStack: (status, history) => renderAgentStack(status, history, { now: new Date().toISOString() }),
  });
  try {
    await agent.start();
    io.stdout(`listening on ${listener.url}\n`);
    log(`agent: ${config.stacks.length} stacks from ${config.sources.length} sources`);
    const signal = await stop;
    log(`agent: ${String(signal)}: draining (the writes in flight finish, leases are given back)`);
    await agent.stop();
    return EXIT.ok;
  } finally {
    await listener.close();
    await store.close();
  }
}

async function readToken(file: string): Promise<string> {
  let text: string;
  try {
    text = (await readFile(file, "utf8")).trim();
  } catch (err) {
    throw new EdgeplanError(`--token-file ${file}: cannot read it (${fileErrorReason(err)})`);
  }
  if (text.length < 16) throw new EdgeplanError(`--token-file ${file}: the token must be at least 16 characters (e.g. openssl rand -hex 32 > ${file})`);
  return text;
}

/** How the client subcommands reach a running agent. */
export interface AgentClientFlags {
  agentUrl?: string;
  tokenFile?: string;
  format?: string;
}

async function clientOf(flags: AgentClientFlags, io: CommandIO): Promise<{ url: string; token: string | null }> {
  const url = flags.agentUrl ?? io.env.EDGEPLAN_AGENT_URL ?? `http://${DEFAULT_AGENT_LISTEN}`;
  return { url, token: flags.tokenFile ? await readToken(resolve(io.cwd, flags.tokenFile)) : null };
}

/** `edgeplan agent status [STACK]`: every stack in a table, or one stack with its history; text or JSON. A read: exit 0 whatever the stacks' state. */
export async function runAgentStatus(stack: string | undefined, flags: AgentClientFlags, io: CommandIO): Promise<number> {
  const { url, token } = await clientOf(flags, io);
  const json = flags.format === "json";
  if (stack === undefined) {
    const body = (await agentRequest(url, "GET", "/api/stacks", token)) as { stacks: StackStatus[] };
    io.stdout(json ? `${JSON.stringify(body, null, 2)}\n` : renderAgentStatusTable(body.stacks));
    return EXIT.ok;
  }
  const path = `/api/stacks/${encodeURIComponent(stack)}`;
  const status = (await agentRequest(url, "GET", path, token)) as StackStatus;
  const { history } = (await agentRequest(url, "GET", `${path}/history?limit=10`, token)) as { history: HistoryEntry[] };
  io.stdout(json ? `${JSON.stringify({ ...status, history }, null, 2)}\n` : renderAgentStackText(status, history));
  return EXIT.ok;
}

/** `edgeplan agent ack STACK RULE --digest D`: acknowledges a rule for one plan of a stack that waits for it. */
export async function runAgentAck(stack: string, rule: string, flags: AgentClientFlags & { digest: string; by?: string }, io: CommandIO): Promise<number> {
  const { url, token } = await clientOf(flags, io);
  const by = flags.by ?? io.env.USER ?? "someone";
  await agentRequest(url, "POST", `/api/stacks/${encodeURIComponent(stack)}/ack`, token, { rule, digest: flags.digest, by });
  io.stderr(`acknowledged ${rule} for plan ${flags.digest} of stack ${stack}; the agent applies it now (edgeplan agent status ${stack})\n`);
  return EXIT.ok;
}

/** `edgeplan agent reconcile|suspend|resume STACK`. */
export async function runAgentAction(verb: "reconcile" | "suspend" | "resume", stack: string, flags: AgentClientFlags, io: CommandIO): Promise<number> {
  const { url, token } = await clientOf(flags, io);
  await agentRequest(url, "POST", `/api/stacks/${encodeURIComponent(stack)}/${verb}`, token);
  const done = { reconcile: "is being reconciled now", suspend: "is suspended: the agent leaves it alone until resume", resume: "is resumed and reconciled now" }[verb];
  io.stderr(`stack ${stack} ${done}\n`);
  return EXIT.ok;
}
