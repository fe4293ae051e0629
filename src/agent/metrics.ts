/**
 * The agent's Prometheus metrics (prom-client), in a registry of its own so that an agent and a server in one process
 * (the tests) never mix their counts. Labels hold stack and source names from the configuration, results and status
 * classes only: never a revision, a URL or anything a request sends, so the number of series stays bounded.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ReconcileResult } from "../model/agent.js";
import { registerProcessMetrics } from "../server/metrics.js";

/** Seconds: from a plan with nothing to do (well under a second) to a rollout step that waits for its checks. */
const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The `code` label of an API answer: its status class (`2xx` ... `5xx`), or `none` when no answer came. */
export function statusClass(status: number | string): string {
  const n = typeof status === "number" ? status : /^\d{3}$/.test(status) ? Number(status) : Number.NaN;
  return n >= 100 && n <= 599 ? `${Math.floor(n / 100)}xx` : "none";
}

/** What the agent reports; `registry.metrics()` gives the text a scrape receives. */
export class AgentMetrics {
  readonly registry = new Registry();
  private readonly reconciliations: Counter<"stack" | "result">;
  private readonly durations: Histogram<"stack">;
  private readonly driftObjects: Gauge<"stack">;
  private readonly waitingRules: Gauge<"stack">;
  private readonly stackReady: Gauge<"stack">;
  private readonly apiAnswers: Counter<"code">;
  private readonly fetches: Counter<"source">;
  private readonly fetchErrors: Counter<"source">;

  constructor() {
    const registers = [this.registry];
    this.reconciliations = new Counter({
      name: "edgeplan_agent_reconciliations_total",
      help: "Reconciliations finished, by stack and result (applied, in_sync, drift, waiting, failed, stalled)",
      labelNames: ["stack", "result"],
      registers,
    });
    this.durations = new Histogram({
      name: "edgeplan_agent_reconciliation_duration_seconds",
      help: "Time of one reconciliation of a stack, from its start to its status written",
      labelNames: ["stack"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.driftObjects = new Gauge({
      name: "edgeplan_agent_drift_objects",
      help: "Objects whose live side differed from the manifests at the stack's last reconciliation",
      labelNames: ["stack"],
      registers,
    });
    this.waitingRules = new Gauge({
      name: "edgeplan_agent_waiting_rules",
      help: "Rules (unacknowledged risks, deny policies) the stack's plan waits on for a person",
      labelNames: ["stack"],
      registers,
    });
    this.stackReady = new Gauge({
      name: "edgeplan_agent_stack_ready",
      help: "1 when the stack's Ready condition is True, 0 when it is False; absent while unknown",
      labelNames: ["stack"],
      registers,
    });
    this.apiAnswers = new Counter({
      name: "edgeplan_agent_api_requests_total",
      help: "Requests the agent sent to the edgeplan API, by answer status class (2xx ... 5xx), none when no answer came",
      labelNames: ["code"],
      registers,
    });
    this.fetches = new Counter({
      name: "edgeplan_agent_git_fetches_total",
      help: "Fetches of a git source that succeeded",
      labelNames: ["source"],
      registers,
    });
    this.fetchErrors = new Counter({
      name: "edgeplan_agent_git_fetch_errors_total",
      help: "Fetches of a git source that failed (unreachable, refused credentials, timed out, unknown ref)",
      labelNames: ["source"],
      registers,
    });
    registerProcessMetrics(this.registry);
  }

  reconciled(stack: string, result: ReconcileResult, seconds: number): void {
    this.reconciliations.inc({ stack, result });
    this.durations.observe({ stack }, seconds);
  }

  drift(stack: string, objects: number): void {
    this.driftObjects.set({ stack }, objects);
  }

  waiting(stack: string, rules: number): void {
    this.waitingRules.set({ stack }, rules);
  }

  /** `null` removes the series: an unknown readiness is not reported as 0. */
  ready(stack: string, ready: boolean | null): void {
    if (ready === null) this.stackReady.remove({ stack });
    else this.stackReady.set({ stack }, ready ? 1 : 0);
  }

  apiRequest(status: number | "none"): void {
    this.apiAnswers.inc({ code: statusClass(status) });
  }

  /** `n` requests that got `status` (`"200"`, `"429"`, or a word such as `network` when no answer came). */
  apiRequests(status: string, n: number): void {
    if (n > 0) this.apiAnswers.inc({ code: statusClass(status) }, n);
  }

  fetched(source: string): void {
    this.fetches.inc({ source });
  }

  fetchError(source: string): void {
    this.fetchErrors.inc({ source });
  }
}
