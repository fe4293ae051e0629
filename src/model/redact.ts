/**
 * The one redactor: it knows every sensitive value of a run (the API key, the GitHub token, the values of
 * `EDGEPLAN_VAR_*` variables, the header values and URL query values of rollout checks and analyses) and replaces
 * each of them with `***` in a text. Every sink applies it as the last line of defence: the process's stdout and
 * stderr (src/commands/io.ts), the error handler (src/cli.ts), the Action's log, comment, summary, annotations and
 * outputs (src/action/run.ts). Values are learnt as they become known (a header value once the manifests are read),
 * so one instance lives as long as the run. Also what a plan shows of a URL or a header (`shownUrl`). Pure.
 */
import type { DesiredState } from "./state.js";

/** Shown in place of a secret, as GitHub shows masked values. */
export const REDACTED = "***";

/** The prefix of the process variables a manifest may name (src/manifest/interpolate.ts). */
export const VAR_PREFIX = "EDGEPLAN_VAR_";

/**
 * The shortest `EDGEPLAN_VAR_*` value redacted: replacing every `1` or `on` of a report would make it unreadable,
 * and a value that short is no secret.
 */
export const MIN_VARIABLE_CHARS = 4;

/**
 * The shortest header or query value of a manifest redacted as text (they are hidden where a plan shows them in any
 * case): shorter ones are words such as `json` or `true` that a report holds for other reasons.
 */
export const MIN_WRITTEN_CHARS = 8;

export type RedactFunction = (text: string) => string;

export class Redactor {
  readonly #values = new Set<string>();
  #sorted: string[] = [];

  /**
   * Learns `values`, each at least `minChars` characters once trimmed (shorter ones are ignored); the lines of a
   * multi-line value are learnt one by one too, as the runner masks them.
   */
  add(values: Iterable<string | undefined>, minChars = 1): this {
    const before = this.#values.size;
    for (const value of values) {
      if (typeof value !== "string" || value.trim().length < minChars) continue;
      this.#values.add(value);
      for (const line of value.split(/\r?\n/)) if (line.trim().length >= minChars) this.#values.add(line);
    }
    // Longer values first, so that a secret that contains another one is hidden whole.
    if (this.#values.size !== before) this.#sorted = [...this.#values].sort((a, b) => b.length - a.length);
    return this;
  }

  /** Learns the value of every `EDGEPLAN_VAR_*` variable of `env`. */
  addVariables(env: Record<string, string | undefined>): this {
    return this.add(
      Object.entries(env).flatMap(([name, value]) => (name.startsWith(VAR_PREFIX) ? [value] : [])),
      MIN_VARIABLE_CHARS,
    );
  }

  /** `text` with every known value replaced by `***`. */
  redact(text: string): string {
    let out = text;
    for (const secret of this.#sorted) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  }

  /** `redact`, bound: for callers that take a function. */
  readonly fn: RedactFunction = (text) => this.redact(text);
}

/** A redactor that knows `secrets` (empty ones ignored), as a function. */
export function createRedactor(secrets: readonly (string | undefined)[]): RedactFunction {
  return new Redactor().add(secrets).fn;
}

/** The raw values of a URL's query (`a=1&b=2`: `1`, `2`); none when it has no query. */
function queryValues(url: string): string[] {
  const at = url.indexOf("?");
  if (at < 0) return [];
  const query = url.slice(at + 1).split("#")[0] as string;
  return query.split("&").flatMap((pair) => {
    const eq = pair.indexOf("=");
    return eq < 0 ? [pair] : [pair.slice(eq + 1)];
  });
}

/**
 * The values of the manifests that reach a header or a URL query: every check's and web metric's query values and
 * header values, as written (a `${EDGEPLAN_VAR_*}` reference among them is not a secret, and harmless to hide).
 */
export function sensitiveValuesOf(desired: DesiredState): string[] {
  return desired.weightedBackends.flatMap((wb) => {
    const rollout = wb.rollout;
    if (!rollout) return [];
    const check = rollout.check ? queryValues(rollout.check.url) : [];
    const metrics = rollout.analysis.flatMap((m) => (m.provider.kind === "web" ? [...queryValues(m.provider.url), ...Object.values(m.provider.headers)] : []));
    return [...check, ...metrics];
  });
}

/** Shown in place of a header value. */
export const SENSITIVE = "(sensitive)";

/** A URL as a plan shows it: its query (which may carry a token) replaced by `***`. */
export function shownUrl(url: string): string {
  const at = url.indexOf("?");
  return at < 0 ? url : `${url.slice(0, at)}?${REDACTED}`;
}
