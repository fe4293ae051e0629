/**
 * The estimate of what applying a plan costs when nothing fails (`Plan.estimate`): exactly the requests `apply`
 * sends from its first write to its last convergence read (in an account of up to 100 edges), and about how long
 * they take. The GETs that check the
 * stack lease (one at most every 5 s, so only in a long run) depend on time, not on the plan: they are not counted. It follows what the
 * applier does (src/apply/engine.ts: one request per change; src/apply/verify.ts and src/commands/apply.ts: what the
 * convergence check reads again) with the read counts of src/model/reads.ts, which the client uses as well. Pure.
 */
import type { Change, Estimate, Plan } from "../model/plan.js";
import { edgeReads, listPages, readsByListing } from "../model/reads.js";
import { formatRateLimit, type RateLimit } from "../model/syntax.js";

/** The client's request budget: its rate limit (null for none) and its requests in flight at once. */
export interface ApplyBudget {
  rateLimit: RateLimit | null;
  concurrency: number;
}

/** The client's defaults (`--rate-limit 120/60s`, `--concurrency 4`), for plans made without a client. */
export const DEFAULT_BUDGET: ApplyBudget = { rateLimit: { count: 120, windowMs: 60_000 }, concurrency: 4 };

/**
 * The time one request is assumed to take, answer included, when no rate limit holds the run back: a round trip
 * to an API across the internet. Only `seconds` depends on it.
 */
export const REQUEST_SECONDS = 0.2;

/** How the convergence check after the run will read. */
export interface EstimateInput {
  budget: ApplyBudget;
  /**
   * Weighted backends the account holds before the run (every stack): the check lists them when that takes fewer
   * requests than reading the touched ones by id. Undefined: it reads them by id (a saved plan's check).
   */
  accountWeightedBackends?: number;
  /** True for a saved plan's check, which also reads the SAML module of every output (its values are shown). */
  outputRoutes: boolean;
}

/** Builds the estimate of applying `plan` (nothing at all for a plan without changes). */
export function buildEstimate(plan: Pick<Plan, "changes" | "outputs">, input: EstimateInput): Estimate {
  const claim = claimRequests(plan.changes, input.accountWeightedBackends);
  const writes = plan.changes.length + claim.writes;
  const reads = writes === 0 ? 0 : weightedBackendReads(plan.changes, input.accountWeightedBackends) + moduleReads(plan, input) + claim.reads;
  const requests = writes + reads;
  return {
    requests,
    writes,
    reads,
    seconds: estimateSeconds(requests, input.budget),
    rate_limit: input.budget.rateLimit ? formatRateLimit(input.budget.rateLimit) : null,
    concurrency: input.budget.concurrency,
  };
}

/**
 * A plan that writes an inventory takes the account's claim lease before its first change (src/apply/claim.ts): its
 * create and its delete, and the listing under it, of the account with the two leases (the stack's and this one).
 * Exact for a saved plan in an account of up to 98 weighted backends (its estimate knows no account size).
 */
function claimRequests(changes: readonly Change[], accountBefore: number | undefined): { writes: number; reads: number } {
  if (!changes.some((c) => c.kind === "inventory")) return { writes: 0, reads: 0 };
  return { writes: 2, reads: listPages((accountBefore ?? 0) + 2) };
}

/** Every weighted backend a change touched is read again: by id, or by listing the account when that is fewer. */
function weightedBackendReads(changes: readonly Change[], accountBefore: number | undefined): number {
  let touched = 0;
  let after = accountBefore ?? 0;
  for (const c of changes) {
    // An inventory object is a weighted backend too, read again like the others.
    if (c.kind !== "weighted_backend" && c.kind !== "inventory") continue;
    touched++;
    if (c.action === "create") after++;
    else if (c.action === "delete") after--;
  }
  if (touched === 0) return 0;
  return readsByListing(touched, accountBefore === undefined ? undefined : after) ? listPages(after) : touched;
}

/**
 * The touched modules (and, for a saved plan, the outputs' SAML modules) are read again: one read for one edge, the
 * first page of the edge list for more (exact in an account of up to 100 edges; beyond, each touched edge that page
 * lacks is read by id too).
 */
function moduleReads(plan: Pick<Plan, "changes" | "outputs">, input: EstimateInput): number {
  const edges = new Set<string>();
  for (const c of plan.changes) if (c.kind === "saml" || c.kind === "circuit_breaker") edges.add(c.edge);
  if (input.outputRoutes) for (const o of plan.outputs) edges.add(o.edge);
  return edgeReads(edges.size);
}

/**
 * About how many seconds `requests` take (whole seconds, rounded up): `concurrency` at a time, each taking
 * REQUEST_SECONDS, and under a rate limit of N per window no faster than the limiter lets them go (the first N at
 * once, each next N one window later).
 */
export function estimateSeconds(requests: number, budget: ApplyBudget): number {
  if (requests <= 0) return 0;
  const byConcurrency = Math.ceil(requests / Math.max(1, budget.concurrency)) * REQUEST_SECONDS;
  const rl = budget.rateLimit;
  const byRate = rl ? (Math.ceil(requests / rl.count) - 1) * (rl.windowMs / 1000) + REQUEST_SECONDS : 0;
  return Math.ceil(Math.max(byConcurrency, byRate) - 1e-9);
}
