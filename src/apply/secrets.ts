/**
 * The values of `${EDGEPLAN_VAR_*}` variables go into a rollout check's URL, and an analysis' URL and header values,
 * only here, as the request is built: the manifests keep the references as written (src/manifest/interpolate.ts),
 * so the plan, the saved plan, the report, the halt record and the live marker hold a reference, never a value.
 * What a request says back (a check's reason, a measurement's value or why it has none) gets the reference back
 * in place of the URL it was sent to, and `***` in place of any value left.
 */
import type { Measurement } from "../core/analysis.js";
import { fillSecrets, type Env } from "../manifest/interpolate.js";
import { Redactor, variablesNamed } from "../model/redact.js";
import type { MetricProvider, RolloutMetric } from "../model/state.js";
import type { Analyzer } from "./analysis.js";
import type { Checker } from "./rollout.js";

/** Takes back out of `text` every URL as sent (`sent` to `written`), then any variable's value. */
function takeBack(text: string, urls: ReadonlyArray<{ sent: string; written: string }>, redactor: Redactor): string {
  let out = text;
  for (const { sent, written } of urls) if (sent !== written) out = out.split(sent).join(written);
  return redactor.redact(out);
}

/** `checker`, sent the check's URL with its variables' values; its reason names the URL as written. */
export function checkerWithSecrets(checker: Checker, env: Env): Checker {
  return async (check, signal) => {
    const redactor = new Redactor().addVariables(env, variablesNamed(check.url));
    const url = fillSecrets(check.url, env);
    if ("problem" in url) return { ok: false, reason: `check ${check.url}: ${url.problem}` };
    const result = await checker({ ...check, url: url.text }, signal);
    return result.ok ? result : { ok: false, reason: takeBack(result.reason, [{ sent: url.text, written: check.url }], redactor) };
  };
}

/** A web provider with its variables' values put in, or the problem of one that is not set. */
function fillProvider(p: MetricProvider, env: Env): { provider: MetricProvider } | { problem: string } {
  if (p.kind !== "web") return { provider: p };
  const url = fillSecrets(p.url, env);
  if ("problem" in url) return url;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(p.headers)) {
    const filled = fillSecrets(value, env);
    if ("problem" in filled) return { problem: `header ${name}: ${filled.problem}` };
    headers[name] = filled.text;
  }
  return { provider: { ...p, url: url.text, headers } };
}

/**
 * `analyzer`, sent each web metric with its variables' values; the measurements name the URLs as written. A metric
 * whose variable is no longer set (a saved plan applied in another shell) is inconclusive, and not measured.
 */
export function analyzerWithSecrets(analyzer: Analyzer, env: Env): Analyzer {
  return async (metrics, options) => {
    const sent = (p: MetricProvider): string[] => (p.kind === "web" ? [p.url, ...Object.values(p.headers)] : []);
    const redactor = new Redactor().addVariables(env, metrics.flatMap((m) => sent(m.provider)).flatMap(variablesNamed));
    const filled = metrics.map((m) => ({ metric: m, ...fillProvider(m.provider, env) }));
    const measured: RolloutMetric[] = filled.flatMap((f) => ("provider" in f ? [{ ...f.metric, provider: f.provider }] : []));
    const urls = filled.flatMap((f) =>
      "provider" in f && f.provider.kind === "web" && f.metric.provider.kind === "web" ? [{ sent: f.provider.url, written: f.metric.provider.url }] : [],
    );
    const taken = measured.length > 0 ? await analyzer(measured, options) : [];
    let next = 0;
    return filled.map((f): Measurement[] => {
      if ("problem" in f) return [{ metric: f.metric.name, value: null, verdict: "inconclusive", why: f.problem }];
      const shown = (text: string): string => takeBack(text, urls, redactor);
      return (taken[next++] ?? []).map((m) => ({ ...m, value: m.value === null ? null : shown(m.value), why: shown(m.why) }));
    });
  };
}
