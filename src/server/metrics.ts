/**
 * The server's Prometheus metrics (prom-client), one registry per server so that several servers in one process
 * (the tests, `--local`) never mix their counts. Labels hold route templates, methods, statuses and reasons only:
 * never a key, an account or an id, so the number of series stays bounded whatever clients send.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { PoolUse, StoreObserver, TransactionOutcome } from "./store.js";

/** The methods of the API; any other method is counted as `other`. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** Seconds: from a cached GET (well under a millisecond) to the contention budget and beyond. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** prom-client's process metrics that are gauges with a `_total` suffix. */
const LINT_REFUSED = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

/** prom-client's process metrics (memory, CPU, event loop lag) in `registry`, without those promtool's lint refuses. */
export function registerProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters; their per-type series (nodejs_active_handles...) stay.
  for (const name of LINT_REFUSED) registry.removeSingleMetric(name);
}

/** Which limit refused a request with 429. */
export type Refusal = "rate_limit" | "inflight_limit";

/** What the pipeline and the store report; `render` gives the text a scrape receives. */
export class ServerMetrics implements StoreObserver {
  readonly registry = new Registry();
  private readonly requests: Counter<"route" | "method" | "status">;
  private readonly latency: Histogram<"route" | "method">;
  private readonly inflight: Gauge;
  private readonly refusals: Counter<"limit">;
  private readonly transactions: Histogram<"outcome">;
  private readonly races: Counter<"reason">;

  /** `poolUse` is read at each scrape (absent: the store has no pool, and no pool series are exported). */
  constructor(poolUse?: () => PoolUse | undefined, ready?: () => boolean) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: "edgeplan_http_requests_total",
      help: "API requests answered (or dropped), by route template, method and status",
      labelNames: ["route", "method", "status"],
      registers,
    });
    this.latency = new Histogram({
      name: "edgeplan_http_request_duration_seconds",
      help: "Time from a request's arrival to its answer, by route template and method",
      labelNames: ["route", "method"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.inflight = new Gauge({ name: "edgeplan_http_requests_in_flight", help: "API requests being answered now", registers });
    this.refusals = new Counter({
      name: "edgeplan_http_requests_refused_total",
      help: "API requests answered 429 by a limit: rate_limit (--rate-limit) or inflight_limit (--max-inflight)",
      labelNames: ["limit"],
      registers,
    });
    this.transactions = new Histogram({
      name: "edgeplan_store_transaction_duration_seconds",
      help: "Time of a store transaction, its runs again after lost races included, by outcome (committed, rolled_back, contended)",
      labelNames: ["outcome"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.races = new Counter({
      name: "edgeplan_store_lost_races_total",
      help: "Transactions rolled back and run again after losing a race, by reason (deadlock, serialization_failure, lock_not_available, graph_lock, database_busy)",
      labelNames: ["reason"],
      registers,
    });
    if (poolUse) this.poolGauges(poolUse);
    if (ready) {
      new Gauge({
        name: "edgeplan_ready",
        help: "1 while /readyz would answer 200 as far as this process knows (not starting, not draining), else 0",
        registers,
        collect() {
          this.set(ready() ? 1 : 0);
        },
      });
    }
    registerProcessMetrics(this.registry);
  }

  private poolGauges(poolUse: () => PoolUse | undefined): void {
    const registers = [this.registry];
    new Gauge({
      name: "edgeplan_store_pool_connections",
      help: "Connections of the PostgreSQL pool, by state: idle, busy, and max (the --pool-size)",
      labelNames: ["state"],
      registers,
      collect() {
        const use = poolUse();
        if (!use) return;
        this.set({ state: "idle" }, use.idle);
        this.set({ state: "busy" }, use.total - use.idle);
        this.set({ state: "max" }, use.max);
      },
    });
    new Gauge({
      name: "edgeplan_store_pool_waiting",
      help: "Transactions waiting for a connection of the PostgreSQL pool",
      registers,
      collect() {
        this.set(poolUse()?.waiting ?? 0);
      },
    });
  }

  /** A request has arrived; call the returned function once with its route template and status when it ends. */
  started(method: string): (route: string, status: string) => void {
    this.inflight.inc();
    const arrived = performance.now();
    const m = METHODS.has(method) ? method : "other";
    return (route, status) => {
      this.inflight.dec();
      this.requests.inc({ route, method: m, status });
      this.latency.observe({ route, method: m }, (performance.now() - arrived) / 1000);
    };
  }

  refused(limit: Refusal): void {
    this.refusals.inc({ limit });
  }

  transaction(seconds: number, outcome: TransactionOutcome): void {
    this.transactions.observe({ outcome }, seconds);
  }

  lostRace(reason: string): void {
    this.races.inc({ reason });
  }

  /** The Prometheus text exposition of every metric, and its content type. */
  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
