/**
 * The one redactor: it knows every sensitive value of a run (the API key, the GitHub token, the values of the
 * `EDGEPLAN_VAR_*` variables the manifests send, the header values and URL queries of rollout checks and analyses)
 * and replaces each of them with `***` in a text. Every sink applies it as the last line of defence: the process's stdout and
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
 * The shortest header value of a manifest redacted as text (it is hidden where a plan shows it in any case):
 * shorter ones are words such as `json` or `true` that a report holds for other reasons.
 */
export const MIN_WRITTEN_CHARS = 8;

export type RedactFunction = (text: string) => string;

export class Redactor {
  readonly #values = new Set<string>();
  #sorted: string[] = [];
  /** URLs as written before their query: whatever query follows one of them is hidden. */
  readonly #urls = new Map<string, RegExp>();

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

  /** Learns the values of the `EDGEPLAN_VAR_*` variables `names` (those a manifest sends), as `env` holds them. */
  addVariables(env: Record<string, string | undefined>, names: Iterable<string>): this {
    return this.add(
      [...names].filter((n) => n.startsWith(VAR_PREFIX)).map((n) => env[n]),
      MIN_VARIABLE_CHARS,
    );
  }

  /**
   * Learns a URL whose query is sensitive: wherever the URL is printed, what follows its `?` becomes `***`, so that
   * a name that also stands in a query (`?service=checkout`) is not hidden everywhere else.
   */
  addUrl(url: string): this {
    const at = url.indexOf("?");
    const base = at < 0 ? url : url.slice(0, at);
    if (base !== "" && !this.#urls.has(base)) this.#urls.set(base, new RegExp(`${base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\?[^\\s"'<>)]+`, "g"));
    return this;
  }

  /** `text` with every known value replaced by `***`, and the query of every known URL. */
  redact(text: string): string {
    let out = text;
    for (const secret of this.#sorted) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    for (const [base, pattern] of this.#urls) if (out.includes(base)) out = out.replace(pattern, () => `${base}?${REDACTED}`);
    return out;
  }

  /** `redact`, bound: for callers that take a function. */
  readonly fn: RedactFunction = (text) => this.redact(text);
}

/** A redactor that knows `secrets` (empty ones ignored), as a function. */
export function createRedactor(secrets: readonly (string | undefined)[]): RedactFunction {
  return new Redactor().add(secrets).fn;
}

/** The `EDGEPLAN_VAR_*` variables a text names (`${EDGEPLAN_VAR_TOKEN}`). */
export function variablesNamed(text: string): string[] {
  return [...text.matchAll(/\$\{(EDGEPLAN_VAR_[A-Za-z0-9_]*)\}/g)].map((m) => m[1] as string);
}

/**
 * Teaches `redactor` what the manifests send and must not show: every check's and web metric's URL (its query is
 * hidden wherever the URL is printed), the header values of 8 characters or more (shorter ones are words such as
 * `json`), and the values (from `env`) of the `EDGEPLAN_VAR_*` variables they name.
 */
export function learnSentValues(redactor: Redactor, desired: DesiredState, env: Record<string, string | undefined>): void {
  for (const wb of desired.weightedBackends) {
    const rollout = wb.rollout;
    if (!rollout) continue;
    const urls = [...(rollout.check ? [rollout.check.url] : []), ...rollout.analysis.flatMap((m) => (m.provider.kind === "web" ? [m.provider.url] : []))];
    const headers = rollout.analysis.flatMap((m) => (m.provider.kind === "web" ? Object.values(m.provider.headers) : []));
    for (const url of urls) redactor.addUrl(url);
    redactor.add(headers, MIN_WRITTEN_CHARS).addVariables(env, [...urls, ...headers].flatMap(variablesNamed));
  }
}

/** Shown in place of a header value. */
export const SENSITIVE = "(sensitive)";

/** A URL as a plan shows it: its query (which may carry a token) replaced by `***`. */
export function shownUrl(url: string): string {
  const at = url.indexOf("?");
  return at < 0 ? url : `${url.slice(0, at)}?${REDACTED}`;
}
