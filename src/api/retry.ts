/**
 * The retry policy of the client, as pure functions: which answers and errors are retried, for which methods, and
 * how long to wait. The loop that applies it lives in client.ts.
 *
 * Why not undici's RetryAgent / interceptors.retry / RetryHandler: their retries re-dispatch straight to the pool,
 * bypassing the client's concurrency semaphore and sliding-window limiter (so a burst of retries could earn the 429s
 * the limiter exists to avoid); their backoff is `minTimeout * timeoutFactor^n` without jitter, and a `Retry-After`
 * is CAPPED by `maxTimeout` instead of being a floor; with `throwOnError` the final error answer's body (error_code,
 * msg) is lost. We also need per-attempt stats and log lines, and two rules they cannot express: a POST whose outcome
 * is unknown must fail with OutcomeUnknownError instead of being resent, and a DELETE that finds 404 after a lost
 * answer has succeeded. The loop is small; the policy is here, tested on its own.
 */

/** Statuses retried for every method for which they mean "nothing was done, try again" (see `decideStatus`). */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

export interface Backoff {
  /** First window, in ms: attempt 0 waits a random time in [0, baseMs). */
  baseMs: number;
  /** Largest window, in ms. */
  capMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { baseMs: 200, capMs: 10_000 };

/** A `Retry-After` above this is not waited for: the request fails at once, saying so. */
export const MAX_RETRY_AFTER_MS = 120_000;

/**
 * Exponential backoff with FULL jitter: a uniform random wait in [0, min(cap, base * 2^retryIndex)).
 * `retryIndex` is 0 before the first retry. `random` returns a number in [0, 1).
 */
export function backoffDelay(retryIndex: number, backoff: Backoff, random: () => number = Math.random): number {
  const window = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.max(0, retryIndex));
  return random() * window;
}

/**
 * Parses a `Retry-After` header into a wait in ms: delta-seconds (`120`, also a decimal such as `1.5`) or an HTTP
 * date (wait until then, relative to `nowEpochMs`). Returns undefined when absent or unreadable; never negative.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowEpochMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  // HTTP dates always name the weekday and the month ("Wed, 21 Oct 2015 07:28:00 GMT"); require letters so that
  // a stray number format is not read as a date.
  if (!/[A-Za-z]/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowEpochMs);
}

/**
 * The wait before a retry: the jittered backoff, but never less than the server's `Retry-After` (a floor: waking
 * earlier only earns another 429).
 */
export function retryDelay(retryIndex: number, retryAfterMs: number | undefined, backoff: Backoff, random?: () => number): number {
  const jittered = backoffDelay(retryIndex, backoff, random);
  return retryAfterMs === undefined ? jittered : Math.max(retryAfterMs, jittered);
}

/** How a network-level failure relates to the request: never sent (safe to resend anything), or maybe carried out. */
export type NetworkFailure =
  | { kind: "not-sent"; code: string; text: string }
  | { kind: "unknown"; code: string; text: string }
  | { kind: "fatal"; code: string; text: string };

/** Errors raised before a connection existed: the request never left the client. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EHOSTDOWN", "UND_ERR_CONNECT_TIMEOUT"]);

/** Errors after the request may have been written: the server may have acted on it. */
const MAYBE_SENT_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_RES_CONTENT_LENGTH_MISMATCH",
  "TIMEOUT",
]);

/**
 * Failures that say the API cannot be reached (refused, reset, a name that does not resolve), as opposed to a slow
 * API (timeouts) or a refused certificate: a run of requests ending in these takes the API as gone (./reachability.ts).
 */
export const CONNECTION_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "ENETDOWN",
  "EHOSTDOWN",
  "UND_ERR_CONNECT_TIMEOUT",
]);

const CODE_TEXT: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  EAI_AGAIN: "name lookup failed for now",
  ENOTFOUND: "host not found",
  ENETUNREACH: "network unreachable",
  EHOSTUNREACH: "host unreachable",
  ENETDOWN: "network down",
  EHOSTDOWN: "host down",
  UND_ERR_CONNECT_TIMEOUT: "connect timeout",
  ECONNRESET: "connection reset",
  EPIPE: "connection closed while sending",
  ETIMEDOUT: "timed out",
  ECONNABORTED: "connection aborted",
  UND_ERR_SOCKET: "the connection closed before the answer",
  UND_ERR_HEADERS_TIMEOUT: "no answer within the timeout",
  UND_ERR_BODY_TIMEOUT: "the answer's body did not arrive within the timeout",
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: "the answer was cut short",
  TIMEOUT: "no answer within the timeout",
};

/** The error code of a network failure (undici, node, or an AggregateError of several connect attempts). */
export function errorCodeOf(err: unknown): string | undefined {
  if (err === null || typeof err !== "object") return undefined;
  const e = err as { code?: unknown; name?: unknown; errors?: unknown; cause?: unknown };
  if (e.name === "TimeoutError") return "TIMEOUT";
  if (typeof e.code === "string" && e.code !== "UND_ERR") return e.code;
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const code = errorCodeOf(inner);
      if (code) return code;
    }
  }
  if (e.cause !== undefined && e.cause !== err) return errorCodeOf(e.cause);
  return typeof e.code === "string" ? e.code : undefined;
}

/** Classifies a thrown network error (never an HTTP answer). */
export function classifyNetworkError(err: unknown): NetworkFailure {
  const code = errorCodeOf(err) ?? "UNKNOWN";
  const text = CODE_TEXT[code] ?? (err instanceof Error ? err.message : String(err));
  if (NOT_SENT_CODES.has(code)) return { kind: "not-sent", code, text };
  if (MAYBE_SENT_CODES.has(code)) return { kind: "unknown", code, text };
  // TLS verification failures, a bad host name, an invalid argument: retrying cannot help.
  return { kind: "fatal", code, text };
}

/** What to do with one HTTP answer. */
export type StatusDecision = "done" | "retry" | "outcome-unknown" | "fail";

/**
 * Decides on an answer's status for a method: 2xx done; 429 retried for every method (the server refused without
 * acting); 502/503/504 retried for idempotent methods; for POST every 5xx means the outcome is unknown (the server
 * or a proxy in front of it may have acted: our own server's `--fail-rate` 503 happens before anything, but a client
 * cannot tell that 503 from a proxy's, so the safe rule is "429 only"); any other status fails.
 */
export function decideStatus(method: string, status: number): StatusDecision {
  if (status >= 200 && status < 300) return "done";
  if (status === 429) return "retry";
  if (method === "POST") return status >= 500 ? "outcome-unknown" : "fail";
  if (RETRY_STATUSES.has(status)) return "retry";
  return "fail";
}
