/**
 * The CLI's client of a running agent's API (`edgeplan agent status|ack|reconcile|suspend|resume`): one request, a
 * timeout, the answer read within a bound, and an error that says what to do when the agent does not answer or
 * refuses. The token is sent in its header and never put in a message.
 */
import { request } from "undici";
import { MAX_API_ANSWER_BYTES, readBodyText } from "../api/body.js";
import { classifyNetworkError } from "../api/retry.js";
import { EdgeplanError } from "../model/errors.js";

/** How long a call waits for the agent's whole answer by default. */
export const AGENT_TIMEOUT_MS = 10_000;

/** `url` without its trailing slashes, after checking it is an http(s) URL without a query. */
function baseOf(url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.search || parsed.hash) {
    throw new EdgeplanError(
      `the agent URL ${JSON.stringify(url)} is not an http:// or https:// URL; give one like http://127.0.0.1:9400 (--agent-url or EDGEPLAN_AGENT_URL)`,
    );
  }
  return url.replace(/\/+$/, "");
}

/** The `{"error"}` of a refusal, or what the answer began with when it has none. */
function refusalText(text: string): string {
  try {
    const error = (JSON.parse(text) as { error?: unknown } | null)?.error;
    if (typeof error === "string") return error;
  } catch {
    // not JSON: shown as it came, shortened below
  }
  return text.slice(0, 200) || "no reason given";
}

/**
 * Sends `method path` (path with its query, e.g. `/api/stacks/web/history?limit=10`) to the agent at `url`, with
 * the bearer `token` when given and `body` as JSON; resolves with the answer's JSON when it is 2xx. Throws an
 * EdgeplanError when nothing answers within `timeoutMs` ("no agent at URL ..."), when the agent refuses (its
 * `{"error"}` text, with a hint for 401 and 403), or when the answer is not JSON.
 */
export async function agentRequest(url: string, method: "GET" | "POST", path: string, token: string | null, body?: unknown, timeoutMs = AGENT_TIMEOUT_MS): Promise<unknown> {
  const base = baseOf(url);
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let status: number;
  let text: string;
  try {
    const res = await request(`${base}${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = res.statusCode;
    text = await readBodyText(res.body, MAX_API_ANSWER_BYTES);
  } catch (err) {
    const why = classifyNetworkError(err).text;
    throw new EdgeplanError(`no agent at ${base} (${why}): is \`edgeplan agent\` running? (--agent-url or EDGEPLAN_AGENT_URL)`, { cause: err });
  }
  const route = `${method} ${path.split("?")[0]}`;
  if (status < 200 || status > 299) {
    const hint = status === 401 ? "; pass --token-file with the agent's token" : "";
    throw new EdgeplanError(`the agent at ${base} refused ${route} (${status}): ${refusalText(text)}${hint}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new EdgeplanError(`${route}: the answer of ${base} is not JSON (HTTP ${status}); is it an edgeplan agent?`);
  }
}
