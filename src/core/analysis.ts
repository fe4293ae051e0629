/**
 * The judging of a rollout's analysis: each measurement of a metric against its `success` and `failure` expressions,
 * each metric's measurements against `count` and `failure_limit`, and the analysis as a whole: go on, roll back, or
 * pause for a person. Pure: the values come in already read (src/apply/analysis.ts reads them).
 */
import { celValue, compileCel } from "../model/cel.js";
import type { RolloutMetric } from "../model/state.js";
import { summarizeValue } from "./halt-record.js";

/** The variables a metric's expressions may use: `result`, of any type (a number stays a double). */
export const METRIC_CEL_VARIABLES = { result: "dyn" } as const;

export type Verdict = "success" | "failure" | "inconclusive";

/** One measurement as judged: the value read (as text, null when none was), the verdict, and why. */
export interface Measurement {
  metric: string;
  value: string | null;
  verdict: Verdict;
  /** The expression that decided (`result >= 0.05`, `not result < 0.01`), or why there is no verdict (`no data`). */
  why: string;
}

/** What a provider gave: a value, or why it has none (`no data`, `HTTP 503 ...`): then the measurement is inconclusive. */
export type Reading = { value: unknown } | { none: string };

/** Characters at most of a value the report shows as itself; a longer one (a whole page, say) is described. */
const SHOWN_VALUE_MAX = 80;

/**
 * A value as the report shows it: numbers and booleans as written, short text quoted, anything else as JSON; a
 * value longer than `SHOWN_VALUE_MAX` by what it is (`summarizeValue`), never its content, since the report goes to
 * logs and job summaries and a body may be a whole HTML page or hold a secret.
 */
export function showValue(value: unknown): string {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= SHOWN_VALUE_MAX ? text : summarizeValue(value);
}

/** Prometheus' forms of the infinities (Go's ParseFloat: `+Inf`, `-Inf`, `Inf`, `infinity`, any case) and of NaN. */
const INFINITY_TEXT = /^([+-]?)inf(inity)?$/i;

/**
 * A sample value written as text, as Prometheus writes it: a decimal or exponent number, `+Inf`/`-Inf`/`Inf` (the
 * infinities are numbers: a `histogram_quantile` in the `+Inf` bucket is above any threshold), or `NaN` (kept NaN:
 * no data). Null when the text is not a number at all.
 */
export function readSampleValue(text: string): number | null {
  const t = text.trim();
  const inf = INFINITY_TEXT.exec(t);
  if (inf) return inf[1] === "-" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (/^nan$/i.test(t)) return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t) && !/^0x[0-9a-f]+$/i.test(t)) return null;
  return Number(t);
}

/** `result` for CEL: a number stays a double whatever its value (0.0 < 1 and 1.0 == 1 both hold); other JSON as CEL values. */
function resultValue(value: unknown): unknown {
  return typeof value === "number" ? value : celValue(value);
}

/** Runs one expression over `result`: true, false, or why it could not (a compile or evaluation error). */
function evaluate(source: string, value: unknown): boolean | { error: string } {
  const compiled = compileCel(source, METRIC_CEL_VARIABLES);
  if ("problem" in compiled) return { error: `${source}: ${compiled.problem.message}` };
  const ran = compiled.program.run({ result: resultValue(value) });
  return "value" in ran ? ran.value : { error: `${source}: ${ran.error}` };
}

/**
 * Judges one reading: `failure` true is a failure; `success` true (with `failure`, if given, false) a success;
 * `success` false with no `failure` a failure; anything else (no value, NaN, both false, an error) inconclusive.
 */
export function judgeMeasurement(metric: RolloutMetric, reading: Reading): Measurement {
  const base = { metric: metric.name };
  if ("none" in reading) return { ...base, value: null, verdict: "inconclusive", why: reading.none };
  const value = showValue(reading.value);
  // NaN is what a ratio of two zero rates gives (no traffic): no evidence either way.
  if (typeof reading.value === "number" && Number.isNaN(reading.value)) return { ...base, value, verdict: "inconclusive", why: "the value is NaN (no traffic?)" };
  const failed = metric.failure === null ? false : evaluate(metric.failure, reading.value);
  if (typeof failed === "object") return { ...base, value, verdict: "inconclusive", why: failed.error };
  if (failed) return { ...base, value, verdict: "failure", why: metric.failure as string };
  if (metric.success === null) return { ...base, value, verdict: "success", why: `not ${metric.failure}` };
  const passed = evaluate(metric.success, reading.value);
  if (typeof passed === "object") return { ...base, value, verdict: "inconclusive", why: passed.error };
  if (passed) return { ...base, value, verdict: "success", why: metric.success };
  if (metric.failure === null) return { ...base, value, verdict: "failure", why: `not ${metric.success}` };
  return { ...base, value, verdict: "inconclusive", why: `neither ${metric.success} nor ${metric.failure}` };
}

/** A shown value (`showValue`) as a reason may repeat it: numbers as shown, anything else by `summarizeValue`. */
function shownSummary(shown: string | null): string {
  if (shown === null) return "no value";
  if (readSampleValue(shown) !== null) return shown;
  try {
    return summarizeValue(JSON.parse(shown));
  } catch {
    // Not JSON: a description `showValue` made of a long value, already without its content.
    return shown;
  }
}

/** A metric's verdict over its measurements so far, or null while more are to be taken. */
export type MetricVerdict = "passed" | "failed" | "inconclusive";

/**
 * A metric's verdict: `failed` as soon as more measurements failed than `failure_limit` allows (no need to take the
 * rest); once `count` were taken, `inconclusive` if any was, else `passed`; null while more are to be taken.
 */
export function judgeMetric(metric: RolloutMetric, measurements: readonly Measurement[]): MetricVerdict | null {
  const failures = measurements.filter((m) => m.verdict === "failure").length;
  if (failures > metric.failure_limit) return "failed";
  if (measurements.length < metric.count) return null;
  return measurements.some((m) => m.verdict === "inconclusive") ? "inconclusive" : "passed";
}

/** What the analysis before a step comes to: go on, roll back (the reason kept in the marker), or pause (the reason). */
export type AnalysisOutcome = { kind: "pass" } | { kind: "rollback"; reason: string } | { kind: "pause"; reason: string };

/**
 * The analysis as a whole, from each metric's measurements (in the manifest's order): the first metric that failed
 * rolls back (`analysis error-rate failed (0.07, result >= 0.05)`, its last failed measurement); else the first
 * inconclusive one pauses (`inconclusive: error-rate: no data`); else the step goes on.
 */
export function judgeAnalysis(metrics: readonly RolloutMetric[], measured: ReadonlyArray<readonly Measurement[]>): AnalysisOutcome {
  const verdicts = metrics.map((m, i) => judgeMetric(m, measured[i] ?? []));
  const failed = verdicts.indexOf("failed");
  if (failed >= 0) {
    const last = (measured[failed] ?? []).filter((m) => m.verdict === "failure").at(-1) as Measurement;
    // The reason is kept in the owner marker: it says what the value was like, never the value when it is a body.
    return { kind: "rollback", reason: `analysis ${last.metric} failed (${shownSummary(last.value)}, ${last.why})` };
  }
  const open = verdicts.findIndex((v) => v !== "passed");
  if (open >= 0) {
    const metric = metrics[open] as RolloutMetric;
    const first = (measured[open] ?? []).find((m) => m.verdict === "inconclusive");
    return { kind: "pause", reason: `inconclusive: ${metric.name}: ${first?.why ?? "not measured"}` };
  }
  return { kind: "pass" };
}
