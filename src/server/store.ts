/**
 * What the server keeps, per account: weighted backends, fixture backends, HTTPS edges and their routes with
 * their modules. The interface is synchronous on purpose: a request's reads and writes run inside one
 * `transaction`, so a rejected request changes nothing and no other request interleaves with it.
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
}

export interface EdgeRecord {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
  hostports: string[];
}

/** The SAML module as stored: the settings and the request-signing key pair made when it was first set. */
export interface StoredSaml extends SamlSettings {
  certificate_pem: string;
  private_key_pem: string;
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

export interface Store {
  /** Runs `fn` in one transaction: all its writes are committed together, or none when it throws. */
  transaction<T>(fn: () => T): T;
  /** A new id `<prefix>_<KSUID>` that sorts after every id this store made before, and its creation second. */
  newId(prefix: string): { id: string; created_at: string };

  getWeightedBackend(account: string, id: string): WeightedBackendRecord | undefined;
  listWeightedBackends(account: string, page: PageQuery): WeightedBackendRecord[];
  countWeightedBackends(account: string): number;
  insertWeightedBackend(account: string, record: WeightedBackendRecord): void;
  /** Replaces description, metadata and children of an existing weighted backend (id and created_at stay). */
  updateWeightedBackend(account: string, record: WeightedBackendRecord): void;
  deleteWeightedBackend(account: string, id: string): boolean;
  /** Ids of weighted backends that list `childId` among their children (at most `limit`). */
  parentsOf(account: string, childId: string, limit: number): string[];
  /** Ids of the weighted backends among the children of weighted backend `id`. */
  weightedChildrenOf(account: string, id: string): string[];
  /** True when `id` names a weighted or fixture backend of the account. */
  backendExists(account: string, id: string): boolean;

  getFixtureBackend(account: string, id: string): FixtureBackendRecord | undefined;
  /**
   * Makes sure a fixture backend with this id exists (its type follows from the id prefix) and returns it.
   * Throws when the id is not a fixture backend id. An existing backend is returned as it is.
   */
  ensureBackend(account: string, id: string): FixtureBackendRecord;
  /** Creates a fixture backend of `type` with a new id. */
  createBackend(account: string, type: FixtureBackendType): FixtureBackendRecord;

  getEdge(account: string, id: string): EdgeRecord | undefined;
  listEdges(account: string, page: PageQuery): EdgeRecord[];
  /**
   * Makes sure an HTTPS edge exists and returns it: with `edgeId`, the edge of that id (created when absent,
   * returned unchanged when present); without, a new edge with a generated id.
   */
  ensureEdge(account: string, edgeId?: string, init?: { hostports?: string[] }): EdgeRecord;

  getRoute(account: string, edgeId: string, routeId: string): RouteRecord | undefined;
  routesOfEdge(account: string, edgeId: string): RouteRecord[];
  /**
   * Makes sure a route exists on the edge (the edge too) and returns it: with `routeId`, created when absent and
   * returned unchanged when present; without, a new route. `init` defaults to `match: "/"`, `match_type:
   * "path_prefix"`. Throws when `routeId` already belongs to another edge.
   */
  ensureRoute(
    account: string,
    edgeId: string,
    routeId?: string,
    init?: { match?: string; match_type?: string },
  ): RouteRecord;
  setSaml(account: string, routeId: string, saml: StoredSaml | null): void;
  setCircuitBreaker(account: string, routeId: string, cb: CircuitBreakerSettings | null): void;

  /** The id a fixtures file entry got when first loaded (see fixtures.ts), so a restart finds it again. */
  fixtureId(account: string, key: string): string | undefined;
  setFixtureId(account: string, key: string, id: string): void;

  close(): void;
}
