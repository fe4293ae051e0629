/**
 * The measurements of a rollout's analysis, at the I/O edge: each metric's provider asked (a Prometheus instant
 * query, or an HTTP request whose answer holds the value), `count` times `interval` apart after `initial_delay`,
 * each reading judged as it comes (src/core/analysis.ts). Never in a plan: only apply measures.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { judgeMeasurement, judgeMetric, readSampleValue, type Measurement, type Reading } from "../core/analysis.js";
import { parseJsonPath, readJsonPath } from "../model/json-path.js";
import type { MetricProvider, RolloutMetric } from "../model/state.js";
import { parseCheckUrl } from "../model/syntax.js";
import { ANSWER_TOO_LARGE, readBodyText } from "../api/body.js";
import { CHECK_ATTEMPTS } from "./rollout.js";

/** Takes the measurements of a step's metrics; the command passes `runRolloutAnalysis`, tests may pass their own. */
export type Analyzer = (metrics: readonly RolloutMetric[], options: AnalysisOptions) => Promise<Measurement[][]>;

export interface AnalysisOptions {
  /** When the previous step was written (ms since the epoch, the API's clock): `initial_delay` counts from it. */
  since: number;
  /** The clock `since` is on (the API's, src/api/api-clock.ts); this machine's when absent. */
  now?: () => number;
  signal?: AbortSignal;
}

const RETRY_PAUSE_MS = 500;

/** The bound of a metric's answer: one value, in JSON or text, is far below it. */
const MAX_METRIC_ANSWER_BYTES = 1024 * 1024;

/** One attempt's answer: a reading, or a failure worth another attempt (no answer, an error status). */
type Attempt = Reading | { retry: string };

/**
 * The value of a Prometheus `/api/v1/query` answer: a scalar's, or the one series' of a vector, as a double. An
 * empty vector is no data; several series, another result type, or an error answer have no value either.
 */
export function readPrometheusAnswer(answer: unknown): Reading {
  const a = answer as { status?: unknown; error?: unknown; data?: { resultType?: unknown; result?: unknown } };
  if (a?.status !== "success") return { none: `Prometheus answered an error: ${typeof a?.error === "string" ? a.error : "no error text"}` };
  const { resultType, result } = a.data ?? {};
  if (resultType === "scalar" && Array.isArray(result)) return { value: sampleValue(result[1]) };
  if (resultType !== "vector" || !Array.isArray(result)) return { none: `the query gave a ${String(resultType)}; it must give one series or a scalar` };
  if (result.length === 0) return { none: "no data" };
  if (result.length > 1) return { none: `query returned ${result.length} series; it must return one` };
  const value = (result[0] as { value?: unknown[] }).value;
  return Array.isArray(value) ? { value: sampleValue(value[1]) } : { none: "the series has no value" };
}

/** A sample's value as Prometheus' JSON writes it (a string: `"0.5"`, `"+Inf"`, `"NaN"`); anything else that is no number is NaN, no data. */
function sampleValue(raw: unknown): number {
  if (typeof raw === "number") return raw;
  return typeof raw === "string" ? (readSampleValue(raw) ?? Number.NaN) : Number.NaN;
}

/** JSON has no literal for the infinities and NaN: a string in one of their text forms is that number. */
function nonFiniteOf(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const n = readSampleValue(value);
  return n !== null && !Number.isFinite(n) ? n : value;
}

/**
 * The value in an HTTP answer's body: at `json_path` in JSON (the whole JSON without one; a path that is missing or
 * null is no data); a body that is not JSON reads as a number when it is one, else as its text (which no path can
 * read into).
 */
export function readWebAnswer(body: string, jsonPath: string | null): Reading {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    const text = body.trim();
    if (jsonPath !== null) return { none: `the answer is not JSON, so ${jsonPath} cannot be read in it` };
    return { value: readSampleValue(text) ?? text };
  }
  if (jsonPath === null) return { value: nonFiniteOf(parsed) };
  const path = parseJsonPath(jsonPath);
  if ("error" in path) return { none: `json_path: ${path.error}` };
  const found = readJsonPath(parsed, path.steps);
  if (!found.found) return { none: `no data (${found.missing} is not in the answer)` };
  return found.value === null ? { none: `no data (${jsonPath} is null)` } : { value: nonFiniteOf(found.value) };
}

/** The request a provider sends. */
function requestOf(p: MetricProvider): { url: string; method: "GET" | "POST"; headers: Record<string, string>; body: string | null } {
  if (p.kind === "prometheus")
    return { url: `${p.address}/api/v1/query?query=${encodeURIComponent(p.query)}`, method: "GET", headers: { accept: "application/json" }, body: null };
  return { url: p.url, method: p.method, headers: p.headers, body: p.body };
}

/** Why a request got no answer, in a few words. */
function failureText(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === "TimeoutError" || e.code === "UND_ERR_HEADERS_TIMEOUT") return `no answer within ${timeoutMs} ms`;
  return (e.message ?? "").includes(e.code ?? "\0") ? (e.message as string) : `${e.code ?? e.name ?? "error"}: ${e.message ?? String(err)}`;
}

/** One request of a provider, and its answer read. The URL is checked again here: a saved plan may have been edited. */
async function attempt(p: MetricProvider, signal?: AbortSignal): Promise<Attempt> {
  const r = requestOf(p);
  const allowed = parseCheckUrl(r.url);
  if ("error" in allowed) return { none: `${r.url}: ${allowed.error}` };
  try {
    const res = await request(allowed.url, {
      method: r.method,
      headers: r.headers,
      body: r.body,
      headersTimeout: p.timeout_ms,
      bodyTimeout: p.timeout_ms,
      signal: AbortSignal.any([AbortSignal.timeout(p.timeout_ms), ...(signal ? [signal] : [])]),
    });
    const text = await readBodyText(res.body, MAX_METRIC_ANSWER_BYTES);
    if (p.kind === "prometheus") {
      // Prometheus answers a bad query with 400 and its reason in JSON: an answer, not worth another attempt.
      if (res.statusCode !== 200 && res.statusCode !== 400 && res.statusCode !== 422) return { retry: `HTTP ${res.statusCode} from ${p.address}` };
      return readPrometheusAnswer(parseJson(text));
    }
    if (res.statusCode < 200 || res.statusCode >= 300) return { retry: `HTTP ${res.statusCode} from ${p.url}` };
    return readWebAnswer(text, p.json_path);
  } catch (err) {
    if ((err as { code?: unknown }).code === ANSWER_TOO_LARGE)
      return { none: `the answer of ${p.kind === "prometheus" ? p.address : p.url} is larger than ${MAX_METRIC_ANSWER_BYTES} bytes` };
    return { retry: `${r.method} ${p.kind === "prometheus" ? p.address : p.url}: ${failureText(err, p.timeout_ms)}` };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * Reads a provider once: up to `CHECK_ATTEMPTS` requests, half a second apart, while it gives no answer or an error
 * status. An answer without a value (no data) is not asked again: it is the reading.
 */
export async function readProvider(p: MetricProvider, signal?: AbortSignal): Promise<Reading> {
  let last = "";
  for (let i = 1; i <= CHECK_ATTEMPTS; i++) {
    if (i > 1 && !(await pause(RETRY_PAUSE_MS, signal))) break;
    const got = await attempt(p, signal);
    if (!("retry" in got)) return got;
    last = got.retry;
  }
  return { none: `unreachable after ${CHECK_ATTEMPTS} attempts (${last})` };
}

/** Sleeps `ms` (nothing when 0 or less); false when the signal aborted it. */
async function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  if (ms <= 0) return true;
  try {
    await sleep(ms, undefined, signal ? { signal } : {});
    return true;
  } catch {
    return false;
  }
}

/** One metric's measurements: after its initial delay, `interval` apart, until its verdict is known (src/core/analysis.ts). */
async function measureMetric(metric: RolloutMetric, options: AnalysisOptions, read: typeof readProvider): Promise<Measurement[]> {
  const taken: Measurement[] = [];
  if (!(await pause(options.since + metric.initial_delay_ms - (options.now ?? Date.now)(), options.signal))) return taken;
  while (judgeMetric(metric, taken) === null) {
    if (taken.length > 0 && !(await pause(metric.interval_ms, options.signal))) break;
    if (options.signal?.aborted) break;
    taken.push(judgeMeasurement(metric, await read(metric.provider, options.signal)));
  }
  return taken;
}

/** Measures every metric of a step at once; their measurements in the metrics' order. Interrupted: what was taken. */
export async function runRolloutAnalysis(metrics: readonly RolloutMetric[], options: AnalysisOptions): Promise<Measurement[][]> {
  return Promise.all(metrics.map((m) => measureMetric(m, options, readProvider)));
}
