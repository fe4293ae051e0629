/**
 * The two sides every plan compares: `desired` (what the manifests say, normalised) and `live` (what the API
 * holds, as read). Both are plain data; the manifest loader builds the first, the API client the second.
 */
import { digestOf } from "./canonical.js";
import type { CircuitBreakerModule, CircuitBreakerSettings, SamlModule, SamlSettings } from "./wire.js";

/** Where a manifest value was written: 1-based line and column, as the `yaml` package reports them. */
export interface SourcePos {
  file: string;
  line: number;
  col: number;
}

/** `file:line:col`, as errors and plans cite a position. */
export function formatPos(pos: SourcePos): string {
  return `${pos.file}:${pos.line}:${pos.col}`;
}

/** Names of WeightedBackend manifests: DNS-label style, so they never contain `_` and never look like an id. */
export const NAME_PATTERN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
export const NAME_MAX = 63;

/** The metadata key edgeplan owns. */
export const MARKER_KEY = "edgeplan";

/** The owner marker kept under `metadata.edgeplan` of every weighted backend edgeplan manages. */
export interface OwnerMarker {
  stack: string;
  name: string;
  protect?: true;
  /** Where a progressive rollout of the object's weights stands, while one is under way or halted. */
  rollout?: RolloutState;
}

/**
 * Where a rollout stands, kept in the owner marker so that a run on any machine takes it up: the weights it started
 * from, a digest of the manifest's weights it moves toward, the last step written, when, and why it halted.
 */
export interface RolloutState {
  from: Record<string, number>;
  /** Digest of the manifest's `backends` as written (`rolloutTargetDigest`, src/kinds/weighted-backend-rollout.ts): another digest is another rollout. */
  target: string;
  /** The last step written (1 to the number of steps). */
  step: number;
  /** When that step was written: RFC 3339 in UTC with milliseconds. */
  at: string;
  /** Set when a check failed: the reason. A halted rollout is not tried again until the manifest changes. */
  halted?: string;
  /** Set while the rollout waits for a person (`edgeplan rollout promote`): why (a pause step, an inconclusive analysis). */
  paused?: string;
  /** Set by `edgeplan rollout promote` to the step it was at: the step after it is taken with no gate (pause, check, analysis) before it. */
  promoted?: number;
}

/** A `{pause: true}` item of a rollout's `steps:`: the rollout waits there for `edgeplan rollout promote NAME`. */
export interface RolloutPause {
  pause: true;
}

/** An item of a rollout's `steps:`: a share of the move in percent, or a pause. */
export type RolloutShare = number | RolloutPause;

/** A rollout's check: a GET asked before each step after the first, and after the last. */
export interface RolloutCheck {
  url: string;
  /** The status that counts as healthy; null: any 2xx. */
  expect_status: number | null;
  timeout_ms: number;
}

/** The `rollout` block of a WeightedBackend manifest, defaults filled. */
export interface RolloutSpec {
  /** Percentage points a child's share of traffic may move in one step (1 to 100); with `shares`, their largest gap. */
  max_step: number;
  /**
   * The manifest's `steps:`, shares of the move in percent, rising, ending with 100, with pauses between them (never
   * first, last or two in a row); null: steps of `max_step`. A pause counts as a step that writes nothing.
   */
  shares: RolloutShare[] | null;
  /** The least time between two steps, as written (`5m`), and in milliseconds. */
  interval: string;
  interval_ms: number;
  check: RolloutCheck | null;
  /** Metrics measured before each step after the first, and after the last; empty: none. */
  analysis: RolloutMetric[];
}

/** Where a metric's value is read: a Prometheus instant query, or a value in the answer of an HTTP request. */
export type MetricProvider =
  | { kind: "prometheus"; address: string; query: string; timeout_ms: number }
  | {
      kind: "web";
      url: string;
      method: "GET" | "POST";
      /** Header values as interpolated from the manifest (only `${EDGEPLAN_VAR_*}` variables can be read). */
      headers: Record<string, string>;
      /** Sent with a POST; null for a GET. */
      body: string | null;
      /** A simple JSONPath (`$.a.b[0]`), or null for the whole body. */
      json_path: string | null;
      timeout_ms: number;
    };

/** One metric of a rollout's analysis, defaults filled; `success` and `failure` are CEL over `result`. */
export interface RolloutMetric {
  name: string;
  provider: MetricProvider;
  /** At least one of the two is given. */
  success: string | null;
  failure: string | null;
  /** After the previous step's write, before the first measurement. */
  initial_delay_ms: number;
  /** Between two measurements. */
  interval_ms: number;
  /** Measurements per step. */
  count: number;
  /** Failed measurements allowed; one more rolls the rollout back. */
  failure_limit: number;
}

export interface DesiredWeightedBackend {
  kind: "WeightedBackend";
  name: string;
  description: string;
  /** The user's metadata mapping, without the owner marker. */
  metadata: Record<string, unknown>;
  /**
   * Children and weights. A key containing `_` is a backend id; any other key is the `name` of another
   * WeightedBackend of the same manifests (a reference, resolved to an id at plan/apply time).
   */
  backends: Record<string, number>;
  /** Adopt this existing object instead of finding it by owner marker. */
  id?: string;
  protect: boolean;
  /** `ignore_changes`: fields set on create and never updated afterwards (src/kinds/ignore-changes.ts). */
  ignoreChanges?: string[];
  /** Move weight changes of the live object in checked steps instead of one write. */
  rollout?: RolloutSpec;
  source: SourcePos;
  /** Positions of individual fields and children (`backends.<key>`), for errors traced back to a line. */
  fieldSources?: Record<string, SourcePos>;
}

/** What a manifest says of one module of a route. */
export type ModuleIntent<T> = { state: "unmanaged" } | { state: "absent"; source: SourcePos } | { state: "present"; settings: T; source: SourcePos };

export interface DesiredEdgeRoute {
  kind: "EdgeRoute";
  edge: string;
  route: string;
  saml: ModuleIntent<SamlSettings> & { idpMetadataFile?: string };
  circuit_breaker: ModuleIntent<CircuitBreakerSettings>;
  /** `ignore_changes`: module fields (`saml.FIELD`, `circuit_breaker.FIELD`) never updated once set. */
  ignoreChanges?: string[];
  /** `protect: true`: the route's managed modules are recorded protected, never pruned once their blocks go. */
  protect?: true;
  source: SourcePos;
  /** Where the `route:` value is written: a route or edge that does not exist is reported there. */
  routeSource?: SourcePos;
}

export interface DesiredState {
  weightedBackends: DesiredWeightedBackend[];
  edgeRoutes: DesiredEdgeRoute[];
}

export interface LiveWeightedBackend {
  id: string;
  created_at: string;
  description: string;
  /** Metadata exactly as the API holds it (a string, usually JSON). */
  metadata: string;
  backends: Record<string, number>;
}

export interface LiveRoute {
  edge: string;
  route: string;
  saml: SamlModule | null;
  circuit_breaker: CircuitBreakerModule | null;
  /** SHA-256 fingerprint (colon-separated hex, as IdPs show it) of the SAML request-signing certificate. */
  samlCertificateSha256?: string;
}

/**
 * The fingerprint of a weighted backend as read: the digest of its fields (not its `uri`, which depends on the
 * server's base URL). A plan records the fingerprint of each object a change touches, and a saved plan is stale when
 * the object no longer has it; the objects a plan leaves alone need none.
 */
export function weightedBackendFingerprint(wb: LiveWeightedBackend): string {
  const { id, created_at, description, metadata, backends } = wb;
  return digestOf({ id, created_at, description, metadata, backends });
}

/** The fingerprint of a route's module as read (an unset module, `null`, has one too). */
export function moduleFingerprint(route: LiveRoute, kind: "saml" | "circuit_breaker"): string {
  return digestOf(route[kind]);
}

export interface LiveState {
  weightedBackends: LiveWeightedBackend[];
  /** Only the routes the manifests name are read. */
  routes: LiveRoute[];
  /**
   * The routes of modules the stack's inventory records and no manifest declares (src/core/inventory.ts), read
   * with those modules only; absent or empty when there are none.
   */
  recorded?: LiveRoute[];
}
