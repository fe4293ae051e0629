/**
 * The API client: one undici Pool (keep-alive, `concurrency` connections), a semaphore bounding the requests in
 * flight, a sliding-window limiter under the server's request budget, retries with full-jitter backoff, and every
 * answer validated with the wire schemas of src/model/wire.ts. The API key is sent in one header and nowhere else:
 * every message built here passes through `redact`.
 */
import { Pool, type Dispatcher } from "undici";
import type { z } from "zod";
import { ApiError, EdgeplanError, InternalError } from "../model/errors.js";
import type { ModuleKind, ModuleSettings, PlannedRequest, WeightedBackendBody } from "../model/plan.js";
import {
  API_VERSION,
  CHILD_BACKEND_SCHEMAS,
  childBackendListSchema,
  CircuitBreakerModuleSchema,
  ErrorBodySchema,
  HEADERS,
  HttpsEdgeListSchema,
  HttpsEdgeSchema,
  SamlModuleSchema,
  WeightedBackendListSchema,
  WeightedBackendSchema,
  type ChildBackend,
  type CircuitBreakerModule,
  type CircuitBreakerSettings,
  type FixtureBackendType,
  type HttpsEdge,
  type SamlModule,
  type SamlSettings,
  type WeightedBackend,
} from "../model/wire.js";
import { ANSWER_TOO_LARGE, MAX_API_ANSWER_BYTES, readBodyText } from "./body.js";
import { NoAnswerError, OutcomeUnknownError, RouteNotFoundError, redact } from "./errors.js";
import { checkBaseUrl, type ClientOptions } from "./options.js";
import { Semaphore, SlidingWindowLimiter, systemClock, type LimiterSlot } from "./rate-limit.js";
import { classifyNetworkError, CONNECTION_CODES, DEFAULT_BACKOFF, decideStatus, MAX_RETRY_AFTER_MS, parseRetryAfter, retryDelay } from "./retry.js";
import { childBackendPath, childBackendsPath, EDGES_PATH, edgePath, parseWritePath, WEIGHTED_BACKENDS_PATH, weightedBackendPath, type WriteTarget } from "../model/paths.js";

export type { ModuleKind };

/** The module object the server answers, per kind. */
export interface ModuleOf {
  saml: SamlModule;
  circuit_breaker: CircuitBreakerModule;
}
/** The client-settable fields a PUT sends, per kind. */
export interface SettingsOf {
  saml: SamlSettings;
  circuit_breaker: CircuitBreakerSettings;
}

/** The body of a create (POST) or of an update (PATCH, always the full body: an absent `backends` empties the map). */
export type { WeightedBackendBody };

/** A write as a change of a plan holds it (`change.request`): the path is relative to the base URL, `body` null for a DELETE. */
export type WriteRequest = PlannedRequest<"POST" | "PATCH" | "PUT" | "DELETE", WeightedBackendBody | ModuleSettings>;

/** What a write answered, by the kind of object its path names; `object` is null for a DELETE (204). */
export type Sent =
  | { kind: "weighted_backend"; object: WeightedBackend | null }
  | { kind: "saml"; object: SamlModule | null }
  | { kind: "circuit_breaker"; object: CircuitBreakerModule | null };

/**
 * The weighted backend a POST or PATCH answered. Throws InternalError for another answer (a module's, or a DELETE's):
 * the caller sent a request of another kind than it meant to.
 */
export function answeredWeightedBackend(sent: Sent, request: WriteRequest): WeightedBackend {
  if (sent.kind !== "weighted_backend" || sent.object === null) {
    throw new InternalError(`${request.method} ${request.path}: expected a weighted backend in the answer`);
  }
  return sent.object;
}

/** The methods each kind of write path takes. */
const WRITE_METHODS: Record<WriteTarget["kind"], readonly string[]> = {
  weighted_backends: ["POST"],
  weighted_backend: ["PATCH", "DELETE"],
  saml: ["PUT", "DELETE"],
  circuit_breaker: ["PUT", "DELETE"],
};

/**
 * The target of a write, after checking that it is one edgeplan makes: a known path, a method it takes, a body
 * exactly when the method carries one. A plan may come from a file, so this is checked before anything is sent.
 */
function checkWrite(request: WriteRequest): WriteTarget {
  const target = parseWritePath(request.path);
  const what = `${String(request.method)} ${String(request.path)}`;
  if (target === null || !WRITE_METHODS[target.kind].includes(request.method)) {
    throw new EdgeplanError(
      `${what}: not a write edgeplan makes (a weighted backend's POST, PATCH or DELETE, or a module's PUT or DELETE); make the plan again with edgeplan plan`,
    );
  }
  if ((request.method === "DELETE") !== (request.body === null || request.body === undefined)) {
    throw new EdgeplanError(`${what}: ${request.method === "DELETE" ? "a DELETE carries no body" : "the request has no body"}; make the plan again with edgeplan plan`);
  }
  return target;
}

export interface ClientStats {
  /** Attempts sent, retries included. */
  requests: number;
  /** Attempts that were retries of an earlier one. */
  retries: number;
  /** Attempts per answer status (`"200"`, `"429"`, ...); attempts that got no answer count under `"network"`. */
  byStatus: Record<string, number>;
  status429: number;
}

export interface ApiClient {
  /** The base URL, normalised (no trailing slash). */
  readonly baseUrl: string;
  /** Every weighted backend of the account, newest first, read page by page (limit 100) following next_page_uri. */
  listWeightedBackends(): Promise<WeightedBackend[]>;
  /** One weighted backend, or null when the API answers 404 for it. */
  getWeightedBackend(id: string): Promise<WeightedBackend | null>;
  /**
   * One child backend of `type` (`GET /backends/<kind>/<id>`), or null when the API answers 404 for it: the account
   * holds no backend of that type with this id.
   */
  getChildBackend(type: FixtureBackendType, id: string): Promise<ChildBackend | null>;
  /** Every child backend of `type` in the account, newest first, read page by page as every list. */
  listChildBackends(type: FixtureBackendType): Promise<ChildBackend[]>;
  /**
   * Sends one planned write (`request: {method, path, body}` of a change, the path relative to the base URL) through
   * the exchange: semaphore, limiter, retries. A POST whose outcome is unknown is never resent (OutcomeUnknownError);
   * a DELETE whose retry answers 404 after a lost answer counts as done (for a module only "module not set",
   * ERR_NGROK_7400). The answer is checked with the wire schema of the path's object; a module's unknown route or
   * edge is a RouteNotFoundError. A request that is not a write edgeplan makes (a method the path does not take, a
   * body on a DELETE or none on another write) is refused before anything is sent.
   */
  send(request: WriteRequest): Promise<Sent>;
  /**
   * The edge with its routes and their modules inline (a module not set is null): the one read of modules. An edge
   * that does not exist (404) is an ApiError saying so.
   */
  getEdge(edgeId: string): Promise<HttpsEdge>;
  /**
   * Every HTTPS edge of the account with its routes and their modules inline, newest first, read page by page
   * (limit 100) following next_page_uri.
   */
  listEdges(): Promise<HttpsEdge[]>;
  /** The first page of `listEdges` (up to 100 edges), and whether it holds them all (its next_page_uri is null). */
  firstEdges(): Promise<{ edges: HttpsEdge[]; complete: boolean }>;
  /** Counts since the client was made (a copy). */
  stats(): ClientStats;
  /** Closes the pool once the requests in flight have finished. */
  close(): Promise<void>;
}

/** An HTTP answer after the retry loop: the last attempt's. */
interface Answer {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  operationId: string | undefined;
  attempts: number;
  /** True when an earlier attempt may have been carried out (no answer, or a 5xx), so this one may see its effect. */
  afterUnknown: boolean;
}

const MAX_PAGES = 1000;

/** One list of the API: its path, the wire schema of a page, and the key of the page's items. */
interface ListOf<K extends string, T extends { id: string }> {
  path: string;
  schema: z.ZodType<Record<K, T[]> & { next_page_uri: string | null }>;
  key: K;
}

const WEIGHTED_BACKEND_LIST: ListOf<"backends", WeightedBackend> = { path: WEIGHTED_BACKENDS_PATH, schema: WeightedBackendListSchema, key: "backends" };
const EDGE_LIST: ListOf<"https_edges", HttpsEdge> = { path: EDGES_PATH, schema: HttpsEdgeListSchema, key: "https_edges" };

/**
 * Makes a client. Throws an EdgeplanError when the base URL is refused (plain http to a host that is not loopback
 * without `insecureHttp`). One client holds one pool: call `close()` when done.
 */
export function createClient(options: ClientOptions): ApiClient {
  return new HttpApiClient(options);
}

class HttpApiClient implements ApiClient {
  readonly baseUrl: string;
  private readonly origin: string;
  private readonly prefix: string;
  private readonly pool: Pool;
  private readonly semaphore: Semaphore;
  private readonly limiter: SlidingWindowLimiter | null;
  private readonly headers: Record<string, string>;
  private readonly counts: ClientStats = { requests: 0, retries: 0, byStatus: {}, status429: 0 };
  private readonly clock;
  /** The connect failure no retry can mend, once one happened: every request to the origin fails with it. */
  private broken: { err: unknown } | undefined;
  /** How to fail each request that waits for the pool, when the pool turns out to be broken. */
  private readonly waiting = new Set<(err: unknown) => void>();

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl, options.insecureHttp);
    const url = new URL(this.baseUrl);
    this.origin = url.origin;
    this.prefix = url.pathname === "/" ? "" : url.pathname;
    this.clock = options.clock ?? systemClock;
    this.pool = new Pool(this.origin, {
      connections: options.concurrency,
      // TLS is verified (undici's default, kept explicit); a connect never waits longer than one attempt may.
      connect: { rejectUnauthorized: true, timeout: Math.min(options.timeoutMs, 10_000) },
    });
    this.pool.on("connectionError", (_origin, _targets, err) => this.connectionFailed(err));
    this.semaphore = new Semaphore(options.concurrency);
    this.limiter = options.rateLimit ? new SlidingWindowLimiter(options.rateLimit, this.clock) : null;
    this.headers = {
      authorization: `Bearer ${options.apiKey}`,
      [options.versionHeader.toLowerCase()]: API_VERSION,
      accept: "application/json",
      "user-agent": "edgeplan",
    };
  }

  stats(): ClientStats {
    return { ...this.counts, byStatus: { ...this.counts.byStatus } };
  }

  async close(): Promise<void> {
    const ended = this.options.onPending?.(`the close of the connections to ${this.origin}`);
    try {
      // A broken pool's close waits for requests it will never send or fail (see `connectionFailed`).
      await (this.broken ? this.pool.destroy() : this.pool.close());
    } finally {
      ended?.();
    }
  }

  /**
   * A connection could not be made. undici 7 leaves a pool's connection unusable after a certificate that names
   * another host (ERR_TLS_CERT_ALTNAME_INVALID): the requests queued behind the one that failed are neither sent nor
   * failed, close() waits for them forever, and with nothing else pending the process ends as if the command had
   * finished. A failure that no retry can mend (a refused certificate, an unknown host) is the answer of every
   * request to this origin, so the requests waiting for the pool fail with it at once, and so does every later one.
   */
  private connectionFailed(err: unknown): void {
    if (classifyNetworkError(err).kind !== "fatal") return;
    this.broken ??= { err };
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const fail of waiting) fail(err);
  }

  /** `pool.request`, failed at once when the pool is or becomes broken (`connectionFailed`). */
  private poolRequest(options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
    const broken = this.broken;
    if (broken) return Promise.reject(broken.err);
    return new Promise((resolve, reject) => {
      this.waiting.add(reject);
      this.pool.request(options).then(
        (res) => {
          // Failed already: an answer that comes after all the same is read to the end and dropped.
          if (this.waiting.delete(reject)) resolve(res);
          else res.body.dump().catch(() => undefined);
        },
        (err: unknown) => {
          this.waiting.delete(reject);
          reject(err);
        },
      );
    });
  }

  /**
   * Runs a list's chain of pages holding one place of the semaphore from its first page to its last. The pages
   * cannot overlap each other (each names the next), so the chain is what the whole read waits for: were the place
   * given back between two pages, an independent request waiting for one would take it, and the chain would wait
   * for that request to end. The place is asked for ahead of the other waiters.
   */
  private async inChainLease<T>(run: () => Promise<T>): Promise<T> {
    await this.semaphore.acquire(true);
    try {
      return await run();
    } finally {
      this.semaphore.release();
    }
  }

  // ---- lists ------------------------------------------------------------------------------------------------------

  /**
   * Every item of one list, newest first, read page by page (limit 100) following next_page_uri, with the chain
   * holding one place of the semaphore. A next_page_uri must stay on our origin and on the list's path, must not
   * repeat an earlier page, and the chain ends within MAX_PAGES; an item a later page repeats (a write between two
   * pages shifts them) is kept once.
   */
  private async listAll<K extends string, T extends { id: string }>(list: ListOf<K, T>): Promise<T[]> {
    const { items, complete } = await this.inChainLease(() => this.listPages(list, MAX_PAGES));
    if (!complete) throw this.contractError("GET", list.path, 200, undefined, `the list did not end after ${MAX_PAGES} pages`);
    return items;
  }

  /** The items of the first `pages` pages of a list, and whether they are all of it (`listAll`'s reading). */
  private async listPages<K extends string, T extends { id: string }>(list: ListOf<K, T>, pages: number): Promise<{ items: T[]; complete: boolean }> {
    const out: T[] = [];
    const ids = new Set<string>();
    let path = `${list.path}?limit=100`;
    const visited = new Set<string>([path]);
    let pending = this.exchange("GET", path, undefined, true);
    for (let page = 0; ; page++) {
      const answer = await pending;
      if (answer.status !== 200) throw this.apiError(answer);
      const json = safeJson(answer.text);
      // The pages are a chain (each names the next), so every step of it adds up: the next page is asked for as
      // soon as this one names it, and this one is checked while the next travels.
      const named = (json as { next_page_uri?: unknown } | undefined)?.next_page_uri;
      if (typeof named === "string" && page + 1 < pages) {
        const next = this.pagePath(named, answer, list.path);
        if (visited.has(next)) throw this.contractError("GET", path, 200, answer.operationId, `next_page_uri repeats an earlier page (${next})`);
        visited.add(next);
        path = next;
        pending = this.exchange("GET", next, undefined, true);
        // Handled where it is awaited; this only keeps a page that is never awaited (this one failed its check)
        // from being reported as unhandled.
        pending.catch(() => undefined);
      }
      const parsed = this.parse(list.schema, answer, json);
      for (const item of parsed[list.key]) {
        if (!ids.has(item.id)) {
          ids.add(item.id);
          out.push(item);
        }
      }
      if (parsed.next_page_uri === null) return { items: out, complete: true };
      if (page + 1 >= pages) return { items: out, complete: false };
    }
  }

  // ---- weighted backends ------------------------------------------------------------------------------------------

  listWeightedBackends(): Promise<WeightedBackend[]> {
    return this.listAll(WEIGHTED_BACKEND_LIST);
  }

  async getWeightedBackend(id: string): Promise<WeightedBackend | null> {
    const answer = await this.exchange("GET", weightedBackendPath(id));
    if (answer.status === 404 && this.errorBody(answer)?.error_code !== undefined) return null;
    if (answer.status !== 200) throw this.apiError(answer);
    return this.parse(WeightedBackendSchema, answer);
  }

  // ---- child backends ---------------------------------------------------------------------------------------------

  async getChildBackend(type: FixtureBackendType, id: string): Promise<ChildBackend | null> {
    const answer = await this.exchange("GET", childBackendPath(type, id));
    if (answer.status === 404 && this.errorBody(answer)?.error_code !== undefined) return null;
    if (answer.status !== 200) throw this.apiError(answer);
    return this.parse(CHILD_BACKEND_SCHEMAS[type], answer);
  }

  listChildBackends(type: FixtureBackendType): Promise<ChildBackend[]> {
    return this.listAll<"backends", ChildBackend>({ path: childBackendsPath(type), schema: childBackendListSchema(type), key: "backends" });
  }

  // ---- edges and modules ------------------------------------------------------------------------------------------

  async getEdge(edgeId: string): Promise<HttpsEdge> {
    const answer = await this.exchange("GET", edgePath(edgeId));
    if (answer.status === 200) return this.parse(HttpsEdgeSchema, answer);
    if (answer.status === 404) throw this.apiError(answer, `edge ${edgeId} does not exist`);
    throw this.apiError(answer);
  }

  listEdges(): Promise<HttpsEdge[]> {
    return this.listAll(EDGE_LIST);
  }

  firstEdges(): Promise<{ edges: HttpsEdge[]; complete: boolean }> {
    return this.inChainLease(() => this.listPages(EDGE_LIST, 1)).then(({ items, complete }) => ({ edges: items, complete }));
  }

  // ---- writes ------------------------------------------------------------------------------------------------------

  async send(request: WriteRequest): Promise<Sent> {
    const target = checkWrite(request);
    const answer = await this.exchange(request.method, request.path, request.body ?? undefined);
    if (target.kind === "weighted_backends" || target.kind === "weighted_backend") {
      if (request.method === "DELETE") {
        if (answer.status === 204 || answer.status === 200) return { kind: "weighted_backend", object: null };
        // The first attempt may have deleted it before its answer was lost: "already gone" is then our own success.
        if (answer.status === 404 && answer.afterUnknown && this.errorBody(answer)?.error_code !== undefined) return { kind: "weighted_backend", object: null };
        throw this.apiError(answer);
      }
      const ok = request.method === "POST" ? answer.status === 201 || answer.status === 200 : answer.status === 200;
      if (!ok) throw this.apiError(answer);
      return { kind: "weighted_backend", object: this.parse(WeightedBackendSchema, answer) };
    }
    const { kind, edge, route } = target;
    if (request.method === "DELETE") {
      if (answer.status === 204 || answer.status === 200) return { kind, object: null } as Sent;
      if (answer.status === 404 && answer.afterUnknown && this.errorBody(answer)?.error_code === "ERR_NGROK_7400") return { kind, object: null } as Sent;
      throw this.moduleError(answer, edge, route);
    }
    if (answer.status !== 200) throw this.moduleError(answer, edge, route);
    return { kind, object: this.parse(moduleSchema(kind), answer) } as Sent;
  }

  // ---- the exchange: semaphore, limiter, one attempt, retries -----------------------------------------------------

  /**
   * Sends one request with retries and returns the last answer whatever its status (callers decide what a 404
   * means). Throws OutcomeUnknownError for a POST that may have been carried out, and ApiError (status 0) when no
   * answer came after every retry, or at once when retrying cannot help (a TLS failure, an unknown host).
   * `inChain`: the request is a page of a list whose caller holds a place for the whole chain (`inChainLease`),
   * so it takes no place of its own, and it goes first through the limiter.
   */
  private async exchange(method: string, path: string, body?: unknown, inChain = false): Promise<Answer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers = payload === undefined ? this.headers : { ...this.headers, "content-type": "application/json" };
    const ended = this.options.onPending?.(`${method} ${path}`);
    try {
      return await this.exchangeWithRetries(method, path, payload, headers, inChain);
    } finally {
      ended?.();
    }
  }

  /** `exchange`'s loop: one attempt after another, as the retry policy decides. */
  private async exchangeWithRetries(method: string, path: string, payload: string | undefined, headers: Record<string, string>, inChain: boolean): Promise<Answer> {
    const backoff = this.options.backoff ?? DEFAULT_BACKOFF;
    const reach = this.options.reachability;
    let afterUnknown = false;
    for (let attempt = 1; ; attempt++) {
      if (reach?.gone.aborted) throw this.goneError(method, path, attempt);
      if (attempt > 1) this.counts.retries++;
      const { result, failure, ms } = await this.attemptOnce(method, path, headers, payload, inChain);
      if (result === undefined && failure === undefined) throw this.goneError(method, path, attempt);
      this.counts.requests++;

      if (result) {
        reach?.answered();
        const statusKey = String(result.status);
        this.counts.byStatus[statusKey] = (this.counts.byStatus[statusKey] ?? 0) + 1;
        if (result.status === 429) this.counts.status429++;
        const answer: Answer = {
          method,
          path,
          ...result,
          operationId: headerOf(result.headers, HEADERS.operationId),
          attempts: attempt,
          afterUnknown,
        };
        if (answer.operationId === undefined) answer.operationId = this.errorBody(answer)?.details?.operation_id;
        if (answer.operationId !== undefined) answer.operationId = this.safe(answer.operationId);
        this.logLine(method, path, statusKey, ms, attempt, answer.operationId);

        const decision = decideStatus(method, result.status);
        if (decision === "done" || decision === "fail") return answer;
        if (decision === "outcome-unknown") {
          const err = this.errorBody(answer);
          const what = `the server answered ${result.status}${err?.error_code ? ` ${err.error_code}` : ""}${err?.msg ? `: ${err.msg}` : ""}`;
          throw new OutcomeUnknownError(method, path, result.status, this.safeCode(err?.error_code), this.safe(what), answer.operationId);
        }
        // decision === "retry"
        const retryAfter = parseRetryAfter(headerOf(result.headers, "retry-after"), Date.now());
        if (attempt > this.options.retries || (retryAfter !== undefined && retryAfter > MAX_RETRY_AFTER_MS)) return answer;
        if (result.status !== 429) afterUnknown = true;
        await this.clock.sleep(retryDelay(attempt - 1, retryAfter, backoff, this.options.random), reach?.gone);
        continue;
      }

      if (this.noAnswer(method, path, failure, ms, attempt)) afterUnknown = true;
      await this.clock.sleep(retryDelay(attempt - 1, undefined, backoff, this.options.random), reach?.gone);
    }
  }

  /**
   * One attempt: a place of the semaphore (unless a chain holds one), a slot of the limiter, the request. Resolves
   * with the answer, or the failure of a request that got none, or neither when the API was taken as gone while it
   * waited for its slot (it was not sent).
   */
  private async attemptOnce(
    method: string,
    path: string,
    headers: Record<string, string>,
    payload: string | undefined,
    inChain: boolean,
  ): Promise<{ result?: { status: number; headers: Answer["headers"]; text: string }; failure?: unknown; ms: number }> {
    if (!inChain) await this.semaphore.acquire();
    try {
      const slot = this.limiter ? await this.limiterSlot(inChain) : null;
      if (slot === undefined) return { ms: 0 };
      const started = this.clock.now();
      const apiClock = this.options.apiClock;
      const sent = apiClock?.local() ?? 0;
      try {
        const res = await this.poolRequest({
          method: method as "GET",
          path: this.prefix + path,
          headers,
          body: payload ?? null,
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
        apiClock?.observe(sent, apiClock.local(), headerOf(res.headers, "date"));
        const result = { status: res.statusCode, headers: res.headers, text: await readBodyText(res.body, MAX_API_ANSWER_BYTES) };
        return { result, ms: this.clock.now() - started };
      } catch (err) {
        return { failure: err, ms: this.clock.now() - started };
      } finally {
        slot?.done();
      }
    } finally {
      if (!inChain) this.semaphore.release();
    }
  }

  /** A slot of the limiter; undefined when the API was taken as gone first (a slot granted later is given back). */
  private async limiterSlot(inChain: boolean): Promise<LimiterSlot | undefined> {
    const pending = (this.limiter as SlidingWindowLimiter).acquire(inChain);
    const gone = this.options.reachability?.gone;
    if (gone === undefined) return pending;
    let onGone = (): void => undefined;
    const wasGone = new Promise<undefined>((resolve) => {
      onGone = () => resolve(undefined);
      if (gone.aborted) resolve(undefined);
      else gone.addEventListener("abort", onGone, { once: true });
    });
    const slot = await Promise.race([pending, wasGone]);
    gone.removeEventListener("abort", onGone);
    if (slot === undefined) void pending.then((s) => s.done());
    return slot;
  }

  /**
   * A request got no answer: logs it, and throws when it ends here (retrying cannot help, a POST that may have been
   * carried out, or no retry left), telling the reachability watch when the failure says the API cannot be reached.
   * Returns true when the request may have been carried out (a retry may then see its effect).
   */
  private noAnswer(method: string, path: string, failure: unknown, ms: number, attempt: number): boolean {
    this.counts.byStatus.network = (this.counts.byStatus.network ?? 0) + 1;
    const net = classifyNetworkError(failure);
    const text = this.safe(net.text);
    const what = `${text} (${net.code})`;
    this.logLine(method, path, `error ${net.code}`, ms, attempt, undefined);
    const cause = sanitizedCause(failure, net.code, this.options.apiKey);
    // A POST that may have been carried out is not retried, so it does not count as a request that got no answer:
    // the listing that looks for its object does, after its own retries.
    // A POST answered at length was carried out, whatever the answer says: its outcome is unknown too.
    if ((net.kind === "unknown" || net.code === ANSWER_TOO_LARGE) && method === "POST") throw new OutcomeUnknownError(method, path, 0, undefined, what, undefined, { cause });
    if (net.kind !== "fatal" && attempt <= this.options.retries) return net.kind === "unknown";
    if (CONNECTION_CODES.has(net.code)) this.options.reachability?.noAnswer(this.origin, what, attempt);
    if (net.kind === "fatal") {
      const msg = PLAIN_HTTP_CODES.has(net.code)
        ? `the server at ${this.origin} does not speak TLS (${net.code}); use http:// (loopback) or check the port`
        : net.code === ANSWER_TOO_LARGE
          ? `the answer from ${this.origin} is larger than any answer of the API (${MAX_API_ANSWER_BYTES} bytes); check --api-url`
          : `no answer from ${this.origin}: ${what}; check --api-url`;
      if (!CONNECTION_CODES.has(net.code)) throw new ApiError(method, path, 0, undefined, msg, undefined, { cause });
      throw new NoAnswerError(method, path, what, msg, false, { cause });
    }
    const tries = `${attempt} attempt${attempt === 1 ? "" : "s"}`;
    throw new NoAnswerError(method, path, what, `no answer from ${this.origin} after ${tries}: ${what}; check --api-url and that the server is up`, false, { cause });
  }

  /** The error of a request not sent (again) because the API was taken as gone (./reachability.ts). */
  private goneError(method: string, path: string, attempt: number): NoAnswerError {
    const gone = this.options.reachability?.cause();
    const what = gone?.what ?? "no answer";
    const again = attempt > 1 ? " again" : "";
    return new NoAnswerError(method, path, what, `not sent${again}: the API at ${this.origin} stopped answering (${what})`, attempt === 1);
  }

  private logLine(method: string, path: string, status: string, ms: number, attempt: number, operationId: string | undefined): void {
    if (!this.options.log) return;
    const line = `${method} ${path} ${status} ${Math.round(ms)}ms attempt ${attempt}${operationId ? ` ${operationId}` : ""}`;
    this.options.log(this.safe(line));
  }

  /** Every text from outside (a server's answer, a library's message) passes here before it joins a message. */
  private safe(text: string): string {
    return redact(text, this.options.apiKey);
  }

  private safeCode(code: string | undefined): string | undefined {
    return code === undefined ? undefined : this.safe(code);
  }

  // ---- answers ----------------------------------------------------------------------------------------------------

  /** The error body of an answer, when it has the API's error shape. */
  private errorBody(answer: Answer): z.infer<typeof ErrorBodySchema> | undefined {
    if (answer.status < 300) return undefined;
    const parsed = ErrorBodySchema.safeParse(safeJson(answer.text));
    return parsed.success ? parsed.data : undefined;
  }

  /** An ApiError for an answer that is not a success; `msg` replaces the server's message when given. */
  private apiError(answer: Answer, msg?: string): ApiError {
    const body = this.errorBody(answer);
    // An HTML page (a proxy's or a web server's error page) is never shown: it is long, and not the API speaking.
    const html = body === undefined && msg === undefined && isHtml(answer) ? this.htmlHint(answer) : undefined;
    let text = msg ?? body?.msg ?? html ?? (answer.text.trim().slice(0, 200) || "(no message)");
    // Every path edgeplan asks for is the API's: a 404 without an error code (and no meaning the caller gives it) means the
    // server does not know the path.
    if (answer.status === 404 && body?.error_code === undefined && msg === undefined && (html === undefined || this.prefix !== "")) {
      text += `; ${this.unknownPathHint()}`;
    }
    if (answer.attempts > 1) text += ` (gave up after ${answer.attempts} attempts)`;
    return new ApiError(answer.method, answer.path, answer.status, this.safeCode(body?.error_code), this.safe(text), answer.operationId);
  }

  /** What to say of an answer that is an HTML page: another server than the API answered. */
  private htmlHint(answer: Answer): string {
    return `the server at ${this.baseUrl} answered ${answer.status} with an HTML page, not the API's JSON: is --api-url the API's address?`;
  }

  /** What to do when the server does not know one of the API's paths: the base URL is not the API's. */
  private unknownPathHint(): string {
    const shape = "the API URL must be the API's base (scheme://host[:port])";
    if (this.prefix !== "") return `${shape}, not ${this.baseUrl}: try ${this.origin}`;
    return `the server at ${this.origin} does not serve the API's paths: ${shape}, check --api-url (or EDGEPLAN_API_URL)`;
  }

  /** The error of a failed module request: RouteNotFoundError for an unknown route or edge. */
  private moduleError(answer: Answer, edge: string, route: string): ApiError {
    const body = this.errorBody(answer);
    // Any coded 404 but "module not set" names the route or edge (ERR_NGROK_404; ERR_NGROK_222 for a malformed id).
    if (answer.status === 404 && body?.error_code !== undefined && body.error_code !== "ERR_NGROK_7400") {
      // The server names the missing resource in details.resource (docs/api.md); without it, a message that names the
      // edge but not the route is about the edge.
      const resource = body.details?.resource;
      const edgeMissing = resource !== undefined ? resource === edge : body.msg.includes(edge) && !body.msg.includes(route);
      return new RouteNotFoundError(answer.method, answer.path, [{ edge, route, edgeExists: !edgeMissing }], answer.operationId);
    }
    return this.apiError(answer);
  }

  private parse<S extends z.ZodType>(schema: S, answer: Answer, json: unknown = safeJson(answer.text)): z.infer<S> {
    if (json === undefined && isHtml(answer)) {
      throw new ApiError(answer.method, answer.path, answer.status, undefined, this.safe(this.htmlHint(answer)), answer.operationId);
    }
    if (json === undefined) {
      throw this.contractError(answer.method, answer.path, answer.status, answer.operationId, "the answer is not JSON");
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issues = parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.length ? i.path.join(".") : "(body)"}: ${i.message}`)
        .join("; ");
      throw this.contractError(answer.method, answer.path, answer.status, answer.operationId, `the answer does not match the API contract (${issues})`);
    }
    return parsed.data;
  }

  private contractError(method: string, path: string, status: number, operationId: string | undefined, what: string): ApiError {
    return new ApiError(method, path, status, undefined, this.safe(`${what}; check that --api-url points at the API`), operationId);
  }

  /** The request path of a `next_page_uri`, which must stay on our origin and on the list's path. */
  private pagePath(next: string, answer: Answer, listPath: string): string {
    let url: URL;
    try {
      url = new URL(next);
    } catch {
      throw this.contractError("GET", answer.path, answer.status, answer.operationId, `next_page_uri is not a URL`);
    }
    if (url.origin !== this.origin || url.pathname !== this.prefix + listPath) {
      // Following it would send the API key to another place: refuse.
      throw this.contractError(
        "GET",
        answer.path,
        answer.status,
        answer.operationId,
        `next_page_uri leaves the list (${url.origin}${url.pathname}, expected ${this.origin}${this.prefix}${listPath}); not followed`,
      );
    }
    return `${listPath}${url.search}`;
  }
}

function moduleSchema(kind: ModuleKind): z.ZodType {
  return kind === "saml" ? SamlModuleSchema : CircuitBreakerModuleSchema;
}

/** TLS errors of a server that answered in plain HTTP: https:// to an http:// server, or to a port that is not TLS. */
const PLAIN_HTTP_CODES: ReadonlySet<string> = new Set(["ERR_SSL_WRONG_VERSION_NUMBER", "ERR_SSL_PACKET_LENGTH_TOO_LONG", "ERR_SSL_HTTP_REQUEST"]);

function headerOf(headers: Answer["headers"], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** An answer that is a web page: said so by its content type, or by its first tag when the type is missing or wrong. */
function isHtml(answer: Answer): boolean {
  const type = headerOf(answer.headers, "content-type") ?? "";
  return /^\s*(?:text\/html|application\/xhtml\+xml)\b/i.test(type) || /^\s*<(?:!doctype\s+html|html)\b/i.test(answer.text);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A stand-in for a library error: its code and redacted message only, so that no header can travel with it. */
function sanitizedCause(err: unknown, code: string, key: string): Error {
  const message = err instanceof Error ? err.message : String(err);
  const cause = new Error(redact(`${code}: ${message}`, key));
  (cause as Error & { code?: string }).code = code;
  return cause;
}
