/**
 * The rollout block of a WeightedBackend, normalised: durations parsed, defaults filled, the pace (`max_step` or a
 * `steps:` list) checked, and in its `analysis` list URLs and JSON paths checked and every `success`/`failure`
 * expression compiled, so that a mistake is an error at its line before anything runs. Pure.
 */
import { compileCel } from "../model/cel.js";
import type { RolloutManifest, RolloutMetricManifest } from "../model/manifest-schema.js";
import { parseJsonPath } from "../model/json-path.js";
import type { MetricProvider, RolloutCheck, RolloutMetric, RolloutShare, RolloutSpec, SourcePos } from "../model/state.js";
import { parseCheckTimeout, parseCheckUrl, parseInterval, parseMetricWait } from "../model/syntax.js";
import { METRIC_CEL_VARIABLES } from "../core/analysis.js";
import type { Pinner } from "./yaml-source.js";

/** A rollout check's timeout when the manifest leaves it out. */
export const DEFAULT_CHECK_TIMEOUT = "10s";

/** Defaults of a metric's fields (docs/manifests.md, "Analysis"). */
export const METRIC_DEFAULTS = { initial_delay: "0s", interval: "10s", count: 1, failure_limit: 0, timeout: "10s" } as const;

/** Where errors go: the build's collector (`error` records one and returns false; `quiet` while a partial document is checked). */
interface Reporter {
  readonly quiet: boolean;
  error(pos: SourcePos, message: string): false;
}

/** Positions of the keys and values of a manifest, and of a character within a text value. */
type Positions = Pick<Pinner, "key" | "value" | "within">;

/**
 * The URL a check or a metric keeps: normalised, unless it names an `${EDGEPLAN_VAR_*}` variable (kept as written,
 * src/manifest/interpolate.ts): its value is put in only when the request is built, and normalising would
 * percent-encode the reference's braces in a path.
 */
function sentUrl(written: string, normalised: string): string {
  return written.includes("${") ? written.trim() : normalised;
}

/** The rollout block with its durations parsed and defaults filled; undefined after reporting what is wrong. */
export function normaliseRollout(written: RolloutManifest, pin: Positions, out: Reporter): RolloutSpec | undefined {
  let ok = true;
  const interval_ms = parseInterval(written.interval);
  if (typeof interval_ms === "string") ok = out.error(pin.value(["rollout", "interval"]), `rollout.interval: ${interval_ms}`);
  let check: RolloutCheck | null = null;
  if (written.check) {
    const url = parseCheckUrl(written.check.url);
    if ("error" in url) ok = out.error(pin.value(["rollout", "check", "url"]), `rollout.check.url: ${url.error}`);
    const timeout = parseCheckTimeout(written.check.timeout ?? DEFAULT_CHECK_TIMEOUT);
    if (typeof timeout === "string") ok = out.error(pin.value(["rollout", "check", "timeout"]), `rollout.check.timeout: ${timeout}`);
    if ("url" in url && typeof timeout === "number")
      check = { url: sentUrl(written.check.url, url.url), expect_status: written.check.expect_status ?? null, timeout_ms: timeout };
  }
  const pace = rolloutPace(written, pin, out);
  const analysis = normaliseAnalysis(written.analysis, pin, out);
  if (!ok || typeof interval_ms === "string" || pace === undefined || analysis === undefined) return undefined;
  return { ...pace, interval: written.interval.trim(), interval_ms, check, analysis };
}

/**
 * `max_step`, or the `steps:` list (shares rising, 100 added at its end, pauses between shares) with its largest
 * gap as `max_step`; undefined after reporting.
 */
function rolloutPace(written: RolloutManifest, pin: Positions, out: Reporter): Pick<RolloutSpec, "max_step" | "shares"> | undefined {
  const { max_step, steps } = written;
  if ((max_step === undefined) === (steps === undefined)) {
    const message =
      max_step === undefined ? "rollout needs max_step (points per step) or steps (shares of the move, e.g. [10, 50, 100])" : "rollout has both max_step and steps; keep one";
    // In a partial document the field may be missing because its bad value was taken out, and was reported.
    if (!out.quiet) out.error(pin.key(["rollout"]), message);
    return undefined;
  }
  if (steps === undefined) return { max_step: max_step as number, shares: null };
  const wrong = stepsListError(steps);
  if (wrong !== null) {
    out.error(pin.value(["rollout", "steps", wrong.index]), `rollout.steps[${wrong.index}]: ${wrong.message}`);
    return undefined;
  }
  const shares: RolloutShare[] = steps.at(-1) === 100 ? [...steps] : [...steps, 100];
  const numbers = shares.filter((s): s is number => typeof s === "number");
  return { max_step: Math.max(...numbers.map((s, i) => s - (numbers[i - 1] ?? 0))), shares };
}

/** The first item of a `steps:` list that breaks its rules (shares rising; a pause neither first, last, nor after another), or null. */
function stepsListError(steps: readonly RolloutShare[]): { index: number; message: string } | null {
  let previous: number | null = null;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i] as RolloutShare;
    if (typeof s !== "number") {
      if (i === 0) return { index: i, message: "a pause cannot come first: the first step is taken by apply; put a share before it" };
      if (i === steps.length - 1) return { index: i, message: "a pause cannot come last: nothing would follow it; put 100 after it" };
      if (typeof steps[i - 1] !== "number") return { index: i, message: "two pauses in a row wait for the same thing; keep one" };
      continue;
    }
    if (previous !== null && s <= previous) {
      return { index: i, message: `${s} does not rise above the step before it; list the shares of the move in rising order` };
    }
    previous = s;
  }
  return null;
}

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
    url: sentUrl(web.url, url.url),
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
function normaliseAnalysis(written: readonly RolloutMetricManifest[] | undefined, pin: Positions, out: Reporter): RolloutMetric[] | undefined {
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
