/**
 * What the server keeps, per account: weighted backends, fixture backends, HTTPS edges and their routes with
 * their modules. Two stores implement it: SQLite (sqlite-store.ts, embedded, one process) and PostgreSQL
 * (pg-store.ts, shared by every replica of one database). The handlers see only these interfaces: every request
 * runs in one `Store.transaction`, so a rejected request changes nothing, and reads made to decide a write take
 * the locks named below, so that concurrent writes through several replicas serialise as they would in one.
 *
 * An account is the hex sha256 of an API key (see `accountForKey`): never the key itself.
 */
import type { CircuitBreakerSettings, FixtureBackendType, SamlSettings } from "../model/wire.js";

export interface WeightedBackendRecord {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
  /** Child backend id to weight. */
  backends: Record<string, number>;
}

export interface FixtureBackendRecord {
  id: string;
  type: FixtureBackendType;
  created_at: string;
  /**
   * The fields its fixture gave (`description`, `metadata` and those of its type, docs/api.md section 2); the ones
   * left out are answered with their empty values (`CHILD_BACKEND_DEFAULTS`).
   */
  fields: ChildBackendFields;
}

/** Fields of a fixture backend as its fixture gave them, JSON values by name. */
export type ChildBackendFields = Record<string, unknown>;

export interface EdgeRecord {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
  hostports: string[];
}

/**
 * The SAML module as stored: the settings and the request-signing certificate made when it was first set. The
 * certificate's private key is never stored: the server signs nothing with it.
 */
export interface StoredSaml extends SamlSettings {
  certificate_pem: string;
}

export interface RouteRecord {
  id: string;
  edge_id: string;
  created_at: string;
  match: string;
  match_type: string;
  saml: StoredSaml | null;
  circuit_breaker: CircuitBreakerSettings | null;
}

/** One page of a list: at most `limit` items whose id sorts before `beforeId`, newest first. */
export interface PageQuery {
  limit: number;
  beforeId?: string;
}

/** A value, or a promise of it: the SQLite store answers at once, the PostgreSQL store over the network. */
export type Awaitable<T> = T | Promise<T>;

/**
 * What one transaction may read and write. Reads flagged `forUpdate` (and `existingBackends`, which only writes
 * call) lock what they read until the transaction ends, so that a check made before a write still holds when the
 * write commits. A write that adds a reference between weighted backends takes `lockGraph` before any of those.
 */
export interface StoreTx {
  /** A new id `<prefix>_<KSUID>` that sorts after every id this store made before, and its creation second. */
  newId(prefix: string): Awaitable<{ id: string; created_at: string }>;
  /** Serialises this transaction with every other that locks the same account (creates that count). */
  lockAccount(account: string): Awaitable<void>;
  /**
   * Serialises this transaction with every other that takes the graph lock of the account: those that add a
   * reference to a weighted backend, so that no two walks for cycles run at once. Take it before any row lock and
   * it waits; with `wait` false (after a row lock, when a wait could deadlock) it throws `TransactionConflict`
   * instead of waiting, and the store runs the transaction again.
   */
  lockGraph(account: string, wait?: boolean): Awaitable<void>;

  getWeightedBackend(account: string, id: string, forUpdate?: boolean): Awaitable<WeightedBackendRecord | undefined>;
  listWeightedBackends(account: string, page: PageQuery): Awaitable<WeightedBackendRecord[]>;
  countWeightedBackends(account: string): Awaitable<number>;
  insertWeightedBackend(account: string, record: WeightedBackendRecord): Awaitable<void>;
  /** Replaces description, metadata and children of an existing weighted backend (id and created_at stay). */
  updateWeightedBackend(account: string, record: WeightedBackendRecord): Awaitable<void>;
  deleteWeightedBackend(account: string, id: string): Awaitable<boolean>;
  /** Ids of weighted backends that list `childId` among their children (at most `limit`). */
  parentsOf(account: string, childId: string, limit: number): Awaitable<string[]>;
  /**
   * Ids of the weighted backends among the children of weighted backend `id`, as committed when the call starts.
   * Unlocked: call it under `lockGraph`, when no other transaction can add a reference.
   */
  weightedChildrenOf(account: string, id: string): Awaitable<string[]>;
  /** Those of `ids` that name a weighted (then locked for sharing) or fixture backend of the account. */
  existingBackends(account: string, ids: string[]): Awaitable<Set<string>>;

  getFixtureBackend(account: string, id: string): Awaitable<FixtureBackendRecord | undefined>;
  /** One page of the account's fixture backends of `type`, newest first. */
  listFixtureBackends(account: string, type: FixtureBackendType, page: PageQuery): Awaitable<FixtureBackendRecord[]>;
  /**
   * Makes sure a fixture backend with this id exists (its type follows from the id prefix) and returns it, with
   * `fields` when it is created now. Throws when the id is not a fixture backend id. An existing backend is
   * returned as it is.
   */
  ensureBackend(account: string, id: string, fields?: ChildBackendFields): Awaitable<FixtureBackendRecord>;
  /** Creates a fixture backend of `type` with a new id and `fields` (default none: every field empty). */
  createBackend(account: string, type: FixtureBackendType, fields?: ChildBackendFields): Awaitable<FixtureBackendRecord>;

  getEdge(account: string, id: string): Awaitable<EdgeRecord | undefined>;
  listEdges(account: string, page: PageQuery): Awaitable<EdgeRecord[]>;
  /**
   * Makes sure an HTTPS edge exists and returns it: with `edgeId`, the edge of that id (created when absent,
   * returned unchanged when present); without, a new edge with a generated id.
   */
  ensureEdge(account: string, edgeId?: string, init?: { hostports?: string[] }): Awaitable<EdgeRecord>;

  getRoute(account: string, edgeId: string, routeId: string, forUpdate?: boolean): Awaitable<RouteRecord | undefined>;
  routesOfEdge(account: string, edgeId: string): Awaitable<RouteRecord[]>;
  /**
   * Makes sure a route exists on the edge (the edge too) and returns it: with `routeId`, created when absent and
   * returned unchanged when present; without, a new route. `init` defaults to `match: "/"`, `match_type:
   * "path_prefix"`. Throws when `routeId` already belongs to another edge.
   */
  ensureRoute(account: string, edgeId: string, routeId?: string, init?: { match?: string; match_type?: string }): Awaitable<RouteRecord>;
  setSaml(account: string, routeId: string, saml: StoredSaml | null): Awaitable<void>;
  setCircuitBreaker(account: string, routeId: string, cb: CircuitBreakerSettings | null): Awaitable<void>;

  /** The id a fixtures file entry got when first loaded (see fixtures.ts), so a restart finds it again. */
  fixtureId(account: string, key: string): Awaitable<string | undefined>;
  setFixtureId(account: string, key: string, id: string): Awaitable<void>;
}

/** Counts requests per account against `--rate-limit`; throws 429 ERR_NGROK_226 when one is over it. */
export interface RateGate {
  take(account: string): Awaitable<void>;
}

export interface TransactionOptions {
  /**
   * Run under the store's start-up lock, the one its migrations take: of several replicas starting at once,
   * one runs `fn` at a time (fixtures are loaded so, once).
   */
  startup?: boolean;
}

/** How a transaction ended: committed, rolled back (the handler threw), or given up after losing races. */
export type TransactionOutcome = "committed" | "rolled_back" | "contended";

/** Told of every transaction and of every race one lost (the metrics of metrics.ts). */
export interface StoreObserver {
  /** A transaction ended after `seconds`, its runs again included. */
  transaction(seconds: number, outcome: TransactionOutcome): void;
  /** A transaction lost a race and runs again; `reason` is a short word (deadlock, database_busy...). */
  lostRace(reason: string): void;
}

/** The connections of a store's pool. */
export interface PoolUse {
  max: number;
  total: number;
  idle: number;
  waiting: number;
}

export interface Store {
  /** `sqlite` or `postgres`, for notices and tests; handlers never look at it. */
  readonly kind: "sqlite" | "postgres";
  /** Told of every transaction from now on; absent: nobody is. */
  observer?: StoreObserver | undefined;
  /**
   * Resolves when the store answers a trivial query within `timeoutMs`; rejects with an Error saying why not (no
   * password in it). Runs outside any transaction queue, so a busy store still answers it when it can.
   */
  ping(timeoutMs: number): Promise<void>;
  /** The use of the store's connection pool, when it has one (PostgreSQL). */
  poolUse?(): PoolUse;
  /**
   * Runs `fn` in one transaction: all its writes are committed (durably) together before the promise resolves,
   * or none when it throws. `fn` may run again, rolled back first, when the transaction lost a race (a deadlock, a
   * `TransactionConflict`, a busy database), so it must do nothing but reads and writes through `tx` (and work that
   * may be repeated). Past the budget of contention.ts it rejects with `StoreContentionError`, nothing committed.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** The rate limit of `--rate-limit` as this store keeps it (SQLite: in this process; PostgreSQL: shared). */
  rateGate(count: number, windowMs: number): RateGate;
  close(): Promise<void>;
}
