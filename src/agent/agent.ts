/**
 * The agent's loop (docs/agent.md): fetch each source on its interval (or when a webhook says so), and reconcile each
 * stack on a new commit, on its interval, when a rollout step is due, when asked, or after a failure with backoff.
 * Stacks due together on one account share one cycle: one listing of the account for all of them. Each stack runs on
 * its own: one that fails or hangs never holds another back. Status, history and notifications are kept per stack.
 */
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { AckRecord, AgentConfig, AgentSource, AgentStack, HistoryEntry, ReconcileTrigger, Revision, StackStatus } from "../model/agent.js";
import { EdgeplanError } from "../model/errors.js";
import { Accounts, readSecret } from "./accounts.js";
import type { AgentControl } from "./http.js";
import type { AgentMetrics } from "./metrics.js";
import type { Notifier } from "./notify.js";
import { pullRequestAcks } from "./pull-requests.js";
import { ACK_DIGEST_CHARS, reconcileStack, type PlanAcks, type ReconcileOutcome } from "./reconcile.js";
import { jitterOf, nextDelay } from "./schedule.js";
import { GitSource } from "./source.js";
import { eventOf, initialStatus, statusAfter, withCondition, worthKeeping } from "./status.js";
import type { AgentStore } from "./store.js";
import { apiUrlOf } from "./stack-api.js";
import type { CommonCliOptions } from "../api/options.js";

export interface AgentDeps {
  store: AgentStore;
  metrics: AgentMetrics;
  notifier: Notifier;
  /** Where sources and snapshots are kept (the agent's own folder). */
  cacheDir: string;
  env: Record<string, string | undefined>;
  log: (line: string) => void;
  /** The client flags (`--rate-limit`, ...) each account's client takes. */
  clientFlags: CommonCliOptions;
  /** The stack lease's TTL (`--lock-ttl`): a replica killed mid-run is taken over within it. */
  lockTtl?: string;
  random?: () => number;
}

/** What the agent knows of a source between fetches. */
interface SourceState {
  git: GitSource;
  config: AgentSource;
  /** The commit the stacks reconcile: the last fetched (and verified, when verification is on). */
  revision: Revision | null;
  /** Its snapshot folder, once written. */
  snapshot: Promise<string> | null;
  /** The snapshot folders written, oldest first (the last two are kept). */
  written: string[];
  /** Why the last fetch or verification failed, while it does. */
  problem: { reason: string; message: string; revision: Revision | null } | null;
  timer: NodeJS.Timeout | null;
  fetching: Promise<void> | null;
  tried: boolean;
}

interface StackState {
  config: AgentStack;
  nextAt: number;
  /** The start and jitter of the cycle it last ran in: its next interval counts from there. */
  cycle: { start: number; jitter: number };
  trigger: ReconcileTrigger;
  running: Promise<void> | null;
  /** Asked again while it ran: it runs once more right after. */
  again: ReconcileTrigger | null;
}

export class Agent implements AgentControl {
  private readonly sources = new Map<string, SourceState>();
  private readonly stackStates = new Map<string, StackState>();
  private readonly accounts: Accounts;
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  /** The stacks (and URLs) already warned that the commit chooses where their key goes. */
  private readonly warned = new Set<string>();

  constructor(
    private readonly config: AgentConfig,
    private readonly deps: AgentDeps,
  ) {
    this.accounts = new Accounts(deps.env, deps.clientFlags, (byStatus) => {
      for (const [status, n] of Object.entries(byStatus)) deps.metrics.apiRequests(status, n);
    });
    for (const s of config.sources) {
      const git = new GitSource(s, join(deps.cacheDir, "sources"), deps.env);
      this.sources.set(s.name, { git, config: s, revision: null, snapshot: null, written: [], problem: null, timer: null, fetching: null, tried: false });
    }
    for (const s of config.stacks) {
      this.stackStates.set(s.name, { config: s, nextAt: Number.POSITIVE_INFINITY, cycle: { start: 0, jitter: 1 }, trigger: "start", running: null, again: null });
    }
  }

  /** Writes the first status of every stack not known yet, then fetches every source (each then keeps its interval). */
  async start(): Promise<void> {
    await mkdir(join(this.deps.cacheDir, "snapshots"), { recursive: true, mode: 0o700 });
    const now = new Date().toISOString();
    for (const { config } of this.stackStates.values()) {
      const known = await this.deps.store.getStatus(config.name);
      const suspended = (await this.deps.store.suspended(config.name)) ?? config.suspend;
      await this.deps.store.putStatus({ ...(known ?? initialStatus(config, suspended, now)), source: config.source, mode: config.mode, suspended });
    }
    for (const name of this.sources.keys()) this.fetchNow(name);
  }

  /** Stops: no new fetch or reconciliation; those running finish their writes in flight and give back their leases. */
  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.sources.values()) if (s.timer) clearTimeout(s.timer);
    await Promise.all([...this.stackStates.values()].map((s) => s.running));
    await Promise.all([...this.sources.values()].map((s) => s.fetching));
    await this.accounts.closeAll();
  }

  // ---- sources ----------------------------------------------------------------------------------------------------

  fetchNow(name: string): void {
    const source = this.sources.get(name);
    if (!source || this.stopping.signal.aborted || source.fetching) return;
    if (source.timer) clearTimeout(source.timer);
    source.fetching = this.fetch(source).finally(() => {
      source.fetching = null;
      source.tried = true;
      if (!this.stopping.signal.aborted) source.timer = setTimeout(() => this.fetchNow(name), source.config.intervalMs).unref();
    });
  }

  private async fetch(source: SourceState): Promise<void> {
    const name = source.config.name;
    let fetched: Revision;
    try {
      fetched = await source.git.fetch(this.stopping.signal);
      this.deps.metrics.fetched(name);
    } catch (err) {
      this.deps.metrics.fetchError(name);
      return this.sourceProblem(source, "FetchFailed", messageOf(err), null);
    }
    if (fetched.sha === source.revision?.sha && source.problem === null) return;
    if (source.config.allowedSignersFile) {
      try {
        await source.git.verify(fetched.sha);
      } catch (err) {
        return this.sourceProblem(source, "UnverifiedCommit", `${messageOf(err)}; the last verified commit stays applied`, fetched);
      }
    }
    const changed = fetched.sha !== source.revision?.sha;
    const first = source.revision === null;
    source.problem = null;
    if (!changed) return;
    source.revision = fetched;
    source.snapshot = this.writeSnapshot(source, fetched.sha);
    this.deps.log(`source ${name}: ${fetched.sha.slice(0, 12)} ${JSON.stringify(fetched.subject)}`);
    for (const s of this.stackStates.values()) if (s.config.source === name) this.due(s, first ? "start" : "commit", 0);
  }

  /** A source that cannot be fetched or verified: said on each of its stacks, which keep the commit they had. */
  private async sourceProblem(source: SourceState, reason: string, message: string, revision: Revision | null): Promise<void> {
    source.problem = { reason, message, revision };
    this.deps.log(`source ${source.config.name}: ${message}`);
    const now = new Date().toISOString();
    for (const s of this.stackStates.values()) {
      if (s.config.source !== source.config.name) continue;
      const status = await this.statusOf(s.config);
      const attempted = revision ?? status.last_attempted_revision;
      await this.deps.store.putStatus({ ...withCondition(status, "Stalled", "True", reason, message, now), last_attempted_revision: attempted });
      await this.deps.notifier.notify({ stack: s.config.name, event: "failed", revision: attempted, message, changes: [], at: now });
      if (source.revision === null) continue;
      // The stacks go on reconciling the commit they had: drift is still corrected.
      if (s.nextAt === Number.POSITIVE_INFINITY) this.due(s, "start", 0);
    }
  }

  /** The commit's files in a folder of the agent's own (read from the fetched objects, never from a work tree). */
  private async writeSnapshot(source: SourceState, sha: string): Promise<string> {
    const dir = join(this.deps.cacheDir, "snapshots", `${source.config.name}-${sha}`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await source.git.snapshot(sha, dir);
    // The commit before stays for a reconciliation that may still read it; older ones go.
    for (const old of source.written.splice(0, Math.max(0, source.written.length - 1))) await rm(old, { recursive: true, force: true });
    source.written.push(dir);
    return dir;
  }

  // ---- scheduling -------------------------------------------------------------------------------------------------

  /** Makes `stack` due in `delayMs` (sooner only: a later time never pushes back an earlier one). */
  private due(stack: StackState, trigger: ReconcileTrigger, delayMs: number): void {
    if (this.stopping.signal.aborted) return;
    if (stack.running) {
      stack.again = trigger;
      return;
    }
    const at = Date.now() + delayMs;
    if (at < stack.nextAt) {
      stack.nextAt = at;
      stack.trigger = trigger;
    }
    this.arm();
  }

  /** One timer, at the earliest time a stack is due. */
  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    const idle = [...this.stackStates.values()].filter((s) => !s.running);
    const next = Math.min(...idle.map((s) => s.nextAt));
    if (!Number.isFinite(next)) return;
    this.timer = setTimeout(() => void this.cycle(), Math.max(0, next - Date.now())).unref();
  }

  /**
   * Starts every stack that is due, and those due within a tenth of their interval (so stacks of an account stay
   * together): one set of listings per account for them.
   */
  private async cycle(): Promise<void> {
    const now = Date.now();
    const cycle = { start: now, jitter: jitterOf((this.deps.random ?? Math.random)()) };
    const due = [...this.stackStates.values()].filter((s) => !s.running && s.nextAt <= now + s.config.intervalMs / 10);
    for (const stack of due) {
      stack.nextAt = Number.POSITIVE_INFINITY;
      stack.cycle = cycle;
      // Taken while its account is found: a trigger meanwhile runs it again afterwards, not twice at once.
      stack.running = Promise.resolve();
    }
    const found = await Promise.all(
      due.map((stack) =>
        this.accountOf(stack).then(
          (account) => ({ stack, account }),
          (err: unknown) => ({ stack, err }),
        ),
      ),
    );
    const byAccount = new Map<string, Array<{ stack: StackState; apiUrl: string; apiKey: string }>>();
    for (const f of found) {
      if ("err" in f) this.start1(f.stack, () => this.failed(f.stack, f.err));
      else if (f.account === null) this.start1(f.stack, async () => undefined);
      else {
        const key = `${f.account.apiUrl}\n${f.account.apiKey}`;
        byAccount.set(key, [...(byAccount.get(key) ?? []), { stack: f.stack, ...f.account }]);
      }
    }
    for (const group of byAccount.values()) {
      let listings: ReturnType<Accounts["listingsFor"]> | null = null;
      for (const { stack, apiUrl, apiKey } of group) {
        this.start1(stack, async () => {
          const session = await this.accounts.sessionFor(apiUrl, apiKey, stack.config.name);
          listings ??= this.accounts.listingsFor(session);
          await this.reconcileOnce(stack, session, listings);
        });
      }
    }
    this.arm();
  }

  /** The account a stack reconciles on; null when its source has no commit yet (it runs once one is fetched). */
  private async accountOf(stack: StackState): Promise<{ apiUrl: string; apiKey: string } | null> {
    const source = this.sources.get(stack.config.source) as SourceState;
    if (source.snapshot === null) return null;
    const dir = await source.snapshot;
    const apiUrl = stack.config.apiUrl ?? (await apiUrlOf(join(dir, stack.config.path), stack.config.env, this.deps.env));
    if (stack.config.apiUrl === undefined && !source.config.allowedSignersFile) this.warnOnce(stack.config.name, apiUrl, source.config);
    const apiKey = await readSecret(stack.config.apiKey ?? { env: "EDGEPLAN_API_KEY" }, this.deps.env, `stack ${stack.config.name}: the API key`);
    return { apiUrl, apiKey };
  }

  /** Says once per stack and URL that the commit, which nobody verifies, chooses where the stack's key is sent. */
  private warnOnce(stack: string, apiUrl: string, source: AgentSource): void {
    const key = `${stack}\n${apiUrl}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.deps.log(
      `warning: stack ${stack}: its API URL ${apiUrl} comes from the commit, so whoever can push to ${source.ref} of source ${source.name} chooses where its key goes; ` +
        `set api_url on the stack in ${this.config.file}, or verify commits (docs/agent.md, "Where the key goes")`,
    );
  }

  private start1(stack: StackState, run: () => Promise<void>): void {
    stack.running = run()
      .catch((err: unknown) => this.failed(stack, err))
      .finally(() => {
        stack.running = null;
        const again = stack.again;
        stack.again = null;
        if (again) this.due(stack, again, 0);
        else this.arm();
      });
  }

  // ---- reconciling ------------------------------------------------------------------------------------------------

  private async reconcileOnce(stack: StackState, session: Awaited<ReturnType<Accounts["sessionFor"]>>, listings: ReturnType<Accounts["listingsFor"]>): Promise<void> {
    const name = stack.config.name;
    const status = await this.statusOf(stack.config);
    if (status.suspended) return;
    const source = this.sources.get(stack.config.source) as SourceState;
    const revision = source.revision;
    const dir = await (source.snapshot as Promise<string>);
    const started = new Date();
    await this.deps.store.putStatus(withCondition(status, "Reconciling", "True", "Progressing", `reconciling ${revision?.sha.slice(0, 12) ?? ""}`, started.toISOString()));
    const outcome = await reconcileStack({
      stack: stack.config,
      dir,
      session,
      listings,
      acks: (question) => this.acksOf(name, source, revision, question),
      signal: this.stopping.signal,
      env: this.deps.env,
      ...(this.deps.lockTtl ? { lockTtl: this.deps.lockTtl } : {}),
    });
    await this.accounts.countRequests();
    await this.record(stack, status, outcome, revision, started, source);
  }

  /**
   * The acknowledgements of a plan: those given with `agent ack`, then, for the rules still waiting, those written in
   * the pull request that merged the commit (when the source names its GitHub repository), kept once found.
   */
  private async acksOf(stack: string, source: SourceState, revision: Revision | null, q: PlanAcks): Promise<AckRecord[]> {
    const recorded = await this.deps.store.acks(stack, q.digest);
    const rules = q.rules.filter((r) => !recorded.some((a) => a.rule === r));
    const pullRequests = source.config.pullRequests;
    if (rules.length === 0 || !pullRequests || !revision) return recorded;
    let found: AckRecord[];
    try {
      found = await pullRequestAcks({ ...source.config, pullRequests }, { ...q, stack, sha: revision.sha, rules }, this.deps.env);
    } catch (err) {
      this.deps.log(`stack ${stack}: ${messageOf(err)}; only acknowledgements given with edgeplan agent ack count`);
      return recorded;
    }
    for (const ack of found) {
      await this.deps.store.addAck(ack);
      this.deps.log(`stack ${stack}: ${ack.rule} acknowledged by ${ack.by} for plan ${q.digest.slice(0, ACK_DIGEST_CHARS)}`);
    }
    return [...recorded, ...found];
  }

  /** Keeps what a reconciliation came to: status, history, metrics, the notification; then schedules the next one. */
  private async record(stack: StackState, before: StackStatus, outcome: ReconcileOutcome, revision: Revision | null, started: Date, source: SourceState): Promise<void> {
    const name = stack.config.name;
    const now = new Date().toISOString();
    let status = statusAfter(before, outcome, revision, now);
    if (source.problem)
      status = {
        ...withCondition(status, "Stalled", "True", source.problem.reason, source.problem.message, now),
        last_attempted_revision: source.problem.revision ?? revision,
      };
    await this.deps.store.putStatus(status);
    const last = (await this.deps.store.history(name, 1))[0];
    if (worthKeeping(last, outcome, revision)) await this.deps.store.addHistory(historyEntry(name, stack.trigger, revision, outcome, started, now), this.config.historyLimit);
    const seconds = (Date.parse(now) - started.getTime()) / 1000;
    this.deps.metrics.reconciled(name, outcome.result, seconds);
    this.deps.metrics.drift(name, status.drift.length);
    this.deps.metrics.waiting(name, status.waiting.length);
    this.deps.metrics.ready(name, outcome.result === "applied" || outcome.result === "in_sync");
    this.deps.log(`stack ${name}: ${outcome.result}: ${outcome.message.split("\n")[0]}`);
    // While the source is refused, its failure was told once (sourceProblem); nothing has recovered yet.
    const event = source.problem && outcome.result !== "failed" ? null : eventOf(before, outcome, revision, stack.config.mode);
    if (event) {
      const changes = outcome.applied.length > 0 ? outcome.applied : outcome.drift.map((d) => `${d.address}: ${d.action} (${d.detail})`);
      await this.deps.notifier.notify({ stack: name, event, revision, message: outcome.message.split("\n")[0] ?? "", changes, at: now });
    }
    this.schedule(stack, outcome, status.failures);
  }

  /** Sets when the stack runs next (it is still running: the timer is armed once it ends). */
  private schedule(stack: StackState, outcome: ReconcileOutcome, failures: number): void {
    stack.nextAt = Date.now() + nextDelay(stack.config, failures, outcome.nextStepAt, stack.cycle, Date.now());
    stack.trigger = failures > 0 ? "retry" : outcome.nextStepAt !== null ? "rollout" : "interval";
  }

  /** A reconciliation that could not start (no API URL, no key): a failure of the stack, retried with backoff. */
  private async failed(stack: StackState, err: unknown): Promise<void> {
    const before = await this.statusOf(stack.config);
    const source = this.sources.get(stack.config.source) as SourceState;
    const outcome: ReconcileOutcome = {
      result: "failed",
      reason: "ReconciliationFailed",
      message: messageOf(err),
      stalled: false,
      digest: null,
      planText: null,
      report: null,
      drift: [],
      waiting: [],
      rollouts: [],
      nextStepAt: null,
      applied: [],
    };
    await this.record(stack, before, outcome, source.revision, new Date(), source);
  }

  private async statusOf(stack: AgentStack): Promise<StackStatus> {
    return (await this.deps.store.getStatus(stack.name)) ?? initialStatus(stack, stack.suspend, new Date().toISOString());
  }

  // ---- control (the HTTP API) ----------------------------------------------------------------------------------------

  stacks(): Promise<StackStatus[]> {
    return this.deps.store.listStatus().then((all) => all.filter((s) => this.stackStates.has(s.name)));
  }

  async stack(name: string): Promise<StackStatus | null> {
    return this.stackStates.has(name) ? this.deps.store.getStatus(name) : null;
  }

  history(name: string, limit: number): Promise<HistoryEntry[]> {
    return this.deps.store.history(name, limit);
  }

  reconcile(name: string): boolean {
    const stack = this.stackStates.get(name);
    if (!stack) return false;
    this.due(stack, "manual", 0);
    return true;
  }

  async suspend(name: string, suspended: boolean): Promise<boolean> {
    const stack = this.stackStates.get(name);
    if (!stack) return false;
    await this.deps.store.setSuspended(name, suspended);
    const status = await this.statusOf(stack.config);
    await this.deps.store.putStatus({ ...status, suspended });
    if (!suspended) this.due(stack, "manual", 0);
    return true;
  }

  async ack(name: string, rule: string, digest: string, by: string): Promise<string | null> {
    const stack = this.stackStates.get(name);
    if (!stack) return `no stack ${name} in this agent`;
    if (digest.length < ACK_DIGEST_CHARS) return `--digest: give at least ${ACK_DIGEST_CHARS} characters of the plan's digest`;
    const waiting = (await this.statusOf(stack.config)).waiting.filter((w) => w.digest.startsWith(digest.toLowerCase()));
    if (waiting.length === 0) return `stack ${name} waits for no plan ${digest}: its plan changed, or it was applied; see edgeplan agent status ${name}`;
    const entry = waiting.find((w) => w.rule === rule);
    if (!entry) return `plan ${digest} of stack ${name} waits for ${waiting.map((w) => w.rule).join(", ")}, not ${rule}`;
    if (entry.level === "deny") return `${rule} is a deny policy: it cannot be acknowledged; change the manifests`;
    if (entry.command === "" || !entry.command.startsWith("edgeplan agent ack")) return `${rule}: ${entry.message}; run ${entry.command}`;
    const record: AckRecord = { stack: name, rule, digest: entry.digest, by, at: new Date().toISOString() };
    await this.deps.store.addAck(record);
    this.due(stack, "manual", 0);
    return null;
  }

  webhookSecret(source: string): Promise<string | null | undefined> {
    const s = this.sources.get(source);
    if (!s) return Promise.resolve(undefined);
    if (!s.config.webhookSecret) return Promise.resolve(null);
    return readSecret(s.config.webhookSecret, this.deps.env, `source ${source}: the webhook secret`);
  }

  ready(): boolean {
    return !this.stopping.signal.aborted && [...this.sources.values()].every((s) => s.tried);
  }
}

function historyEntry(stack: string, trigger: ReconcileTrigger, revision: Revision | null, o: ReconcileOutcome, started: Date, now: string): Omit<HistoryEntry, "seq"> {
  return {
    stack,
    started_at: started.toISOString(),
    finished_at: now,
    trigger,
    revision,
    result: o.result,
    message: o.message,
    digest: o.digest,
    plan_text: o.planText,
    report: o.report,
  };
}

function messageOf(err: unknown): string {
  return err instanceof EdgeplanError || err instanceof Error ? err.message : String(err);
}
