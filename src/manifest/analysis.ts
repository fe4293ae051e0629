/**
 * The `analysis` list of a rollout block, normalised: durations parsed, defaults filled, URLs and JSON paths checked,
 * and every `success`/`failure` expression compiled, so that a mistake is an error at its line before anything runs.
 * Pure.
 */
import { compileCel } from "../model/cel.js";
import type { RolloutMetricManifest } from "../model/manifest-schema.js";
import { parseJsonPath } from "../model/json-path.js";
import type { MetricProvider, RolloutMetric, SourcePos } from "../model/state.js";
import { parseCheckTimeout, parseCheckUrl, parseMetricWait } from "../model/syntax.js";
import { METRIC_CEL_VARIABLES } from "../core/analysis.js";
import type { Pinner } from "./yaml-source.js";

/** Defaults of a metric's fields (docs/manifests.md, "Analysis"). */
export const METRIC_DEFAULTS = { initial_delay: "0s", interval: "10s", count: 1, failure_limit: 0, timeout: "10s" } as const;

/** Where errors go: the build's collector (`error` records one and returns false). */
interface Reporter {
  error(pos: SourcePos, message: string): false;
}

/** Positions of the fields of a manifest, and of a character within a text value. */
type Positions = Pick<Pinner, "value" | "within">;

/** One metric of the list: the path of one of its fields, and `fail`, an error about a field (none: the metric itself) at its value unless `pos` is given. */
interface Ctx {
  pin: Positions;
  at: (...fields: string[]) => PropertyKey[];
  fail: (fields: string[], message: string, pos?: SourcePos) => false;
}

/** The provider of a metric: exactly one of `prometheus` and `web`, its URL and timeout checked; undefined after reporting. */
function normaliseProvider(m: RolloutMetricManifest, c: Ctx): MetricProvider | undefined {
  if ((m.prometheus === undefined) === (m.web === undefined)) {
    c.fail([], `give one provider, prometheus or web (${m.prometheus ? "not both" : "none is given"})`);
    return undefined;
  }
  const field = m.prometheus ? "prometheus" : "web";
  const written = (m.prometheus ?? m.web) as { timeout?: string };
  const url = parseCheckUrl(m.prometheus ? m.prometheus.address : (m.web?.url as string));
  const urlField = m.prometheus ? "address" : "url";
  let ok = true;
  if ("error" in url) ok = c.fail([field, urlField], url.error);
  const timeout_ms = parseCheckTimeout(written.timeout ?? METRIC_DEFAULTS.timeout);
  if (typeof timeout_ms === "string") ok = c.fail([field, "timeout"], timeout_ms);
  const path = m.web?.json_path === undefined ? undefined : parseJsonPath(m.web.json_path);
  if (path && "error" in path) ok = c.fail(["web", "json_path"], path.error);
  if (m.web?.body !== undefined && (m.web.method ?? "GET") !== "POST") ok = c.fail(["web", "body"], "a body is sent only with method: POST; add it, or remove the body");
  if (!ok || "error" in url || typeof timeout_ms === "string") return undefined;
  if (m.prometheus) return { kind: "prometheus", address: url.url.replace(/\/$/, ""), query: m.prometheus.query, timeout_ms };
  const web = m.web as NonNullable<RolloutMetricManifest["web"]>;
  return {
    kind: "web",
    url: url.url,
    method: web.method ?? "GET",
    headers: { ...(web.headers ?? {}) },
    body: web.body ?? null,
    json_path: web.json_path?.trim() ?? null,
    timeout_ms,
  };
}

/** Compiles `success` and `failure` (one at least): each problem is an error at its expression. */
function checkExpressions(m: RolloutMetricManifest, c: Ctx): boolean {
  if (m.success === undefined && m.failure === undefined) return c.fail([], "give success, failure or both (CEL over result, e.g. success: 'result < 0.01')");
  let ok = true;
  for (const field of ["success", "failure"] as const) {
    const source = m[field];
    if (source === undefined) continue;
    const compiled = compileCel(source, METRIC_CEL_VARIABLES);
    if ("problem" in compiled) {
      // The error's own place in the expression, when the YAML writes it as it reads.
      ok = c.fail([field], `${compiled.problem.message}; the expression is CEL over result, e.g. result < 0.01`, c.pin.within(c.at(field), compiled.problem.start));
    }
  }
  return ok;
}

/** One metric with its defaults filled; undefined after reporting what is wrong. */
function normaliseMetric(m: RolloutMetricManifest, c: Ctx): RolloutMetric | undefined {
  const provider = normaliseProvider(m, c);
  let ok = checkExpressions(m, c);
  const initial_delay_ms = parseMetricWait(m.initial_delay ?? METRIC_DEFAULTS.initial_delay, 0);
  if (typeof initial_delay_ms === "string") ok = c.fail(["initial_delay"], initial_delay_ms);
  const interval_ms = parseMetricWait(m.interval ?? METRIC_DEFAULTS.interval, 1000);
  if (typeof interval_ms === "string") ok = c.fail(["interval"], interval_ms);
  if (!ok || provider === undefined || typeof initial_delay_ms === "string" || typeof interval_ms === "string") return undefined;
  return {
    name: m.name,
    provider,
    success: m.success ?? null,
    failure: m.failure ?? null,
    initial_delay_ms,
    interval_ms,
    count: m.count ?? METRIC_DEFAULTS.count,
    failure_limit: m.failure_limit ?? METRIC_DEFAULTS.failure_limit,
  };
}

/**
 * The metrics of `rollout.analysis` (none: an empty list), or undefined after reporting every problem at its line.
 * Names are unique within one rollout: they name the metric in reports and in the pause's reason.
 */
export function normaliseAnalysis(written: readonly RolloutMetricManifest[] | undefined, pin: Positions, out: Reporter): RolloutMetric[] | undefined {
  const metrics: RolloutMetric[] = [];
  let ok = true;
  const seen = new Set<string>();
  (written ?? []).forEach((m, i) => {
    const at = (...fields: string[]) => ["rollout", "analysis", i, ...fields];
    const fail = (fields: string[], message: string, pos = pin.value(at(...fields))) =>
      out.error(pos, `rollout.analysis[${i}]${fields.map((f) => `.${f}`).join("")}: ${message}`);
    const c: Ctx = { pin, at, fail };
    if (seen.has(m.name)) ok = fail(["name"], `${m.name} is already the name of another metric of this rollout; give each a name of its own`);
    seen.add(m.name);
    const metric = normaliseMetric(m, c);
    if (metric === undefined) ok = false;
    else metrics.push(metric);
  });
  return ok ? metrics : undefined;
}
