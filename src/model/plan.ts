/**
 * A plan: plain data saying what differs between `desired` and `live` and which calls converge them. It is built by
 * one pure function (src/core/plan.ts `buildPlan`), read by the renderers (src/render/) and by the applier, and
 * saved as JSON (`plan --out`, schema in ./plan-schema.ts). Field names are snake_case because the JSON plan is a
 * public format (`format_version: 1`); the TypeScript types and the JSON are the same objects.
 */
import type { OwnerMarker, RolloutCheck, RolloutMetric, RolloutShare } from "./state.js";

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export const PLAN_FORMAT_VERSION = 1;

export type WeightedBackendAction = "create" | "update" | "delete" | "adopt" | "takeover" | "rename" | "rollout";
export type ModuleAction = "replace" | "delete";
export type ModuleKind = "saml" | "circuit_breaker";
export type RiskRule = "auth-removal" | "traffic-shift" | "no-traffic" | "mass-delete";
export const RISK_RULES: readonly RiskRule[] = ["auth-removal", "traffic-shift", "no-traffic", "mass-delete"];
/**
 * How a policy's name is written, and so every word `--ack` or `/edgeplan ack` may name (the built-in rules are
 * written so too): lower-case letters, digits and dashes, starting with a letter.
 */
export const RULE_NAME = /^[a-z][a-z0-9-]{0,62}$/;

/** One field that differs. `before` is null for an `add`, `after` is null for a `remove`. */
export interface FieldDiff {
  /** `description`, `metadata.<key>`, `idp_metadata`, `authorized_groups`... */
  path: string;
  op: "add" | "remove" | "change";
  before: JsonValue;
  after: JsonValue;
  /**
   * For long multi-line strings (IdP metadata XML): a short line diff, each line starting with `+ `, `- `, `  `
   * (context) or `@@` (a hunk header), already cut to a readable length. Null for other values.
   */
  lines: string[] | null;
}

/** One child of a weighted backend, before and after, with its share of the parent's traffic. */
export interface WeightChange {
  /** The child's id; for a child created by this same plan, its manifest name (its id is known after apply). */
  child: string;
  /** The child's name: its manifest name, else the name in its owner marker of this stack; null for others. */
  name: string | null;
  known_after_apply: boolean;
  /** Null when the child is absent on that side. */
  before: number | null;
  after: number | null;
  /** Share of the parent's traffic in percent (0 to 100, one decimal); null when the child is absent on that side. */
  share_before: number | null;
  share_after: number | null;
  /** True when the weight differs (a child added, removed or re-weighted). */
  changed: boolean;
}

/** A weighted backend as compared: metadata parsed (an object), or the raw text when it is not a JSON object. */
export interface WeightedBackendValue {
  description: string;
  metadata: JsonValue;
  /** Children by id (or by name for a child known after apply), sorted by key. */
  backends: Record<string, number>;
}

/** The JSON body of a POST or PATCH of a weighted backend: always complete (an absent `backends` empties the map). */
export interface WeightedBackendBody {
  description: string;
  /** Canonical JSON of the user's metadata plus the owner marker. */
  metadata: string;
  /** Keys are backend ids, except the keys listed in the change's `refs` (manifest names resolved at apply time). */
  backends: Record<string, number>;
}

export interface PlannedRequest<M extends string, B> {
  method: M;
  /** Relative to the API base URL. For a create, the path of the collection. */
  path: string;
  /** The full body to send; null for a DELETE. */
  body: B | null;
}

/**
 * What a `rollout` change writes:
 * - `step`: the next step toward the manifest's weights;
 * - `confirm`: the manifest's weights are written; the last check runs, then the rollout state is cleared;
 * - `return`: the manifest went back to the weights the rollout started from: one write, at once;
 * - `halt`: a check failed; the weights the rollout started from are written back and the rollout marked halted
 *   (made by apply, never by plan);
 * - `pause`: an analysis was inconclusive; the weights stay, the marker's rollout state says why it waits for a
 *   person (made by apply, never by plan).
 */
export type RolloutPhase = "step" | "confirm" | "return" | "halt" | "pause";

/** What a rollout asks before each step after the first, and after the last. */
export interface RolloutGates {
  check: RolloutCheck | null;
  /** Empty: no analysis. */
  analysis: RolloutMetric[];
}

/** One step of a progressive rollout: which of how many, when it is due, and what guards it. */
export interface RolloutStep {
  phase: RolloutPhase;
  /** The step this change writes (a `confirm` repeats the last step), and how many steps the rollout has. */
  step: number;
  steps: number;
  /**
   * `due`: the next apply writes it; `waiting`: not before `due_at`; `halted`: not until the manifest changes or
   * `rollout retry NAME`; `paused`: not until a person runs `edgeplan rollout promote NAME`.
   */
  status: "due" | "waiting" | "halted" | "paused";
  /** When the step may be written (RFC 3339, UTC, milliseconds): the last step's time plus the interval. */
  due_at: string;
  /** When the step after this one is due, if this one is written when it is due; null when none follows. */
  next_due_at: string | null;
  max_step: number;
  /** The manifest's `steps:` (shares of the move in percent and pauses, ending with 100), or null for steps of `max_step` points. */
  shares: RolloutShare[] | null;
  interval: string;
  interval_ms: number;
  /** Asked before this step is written (every step after the first, and the confirmation); null: no check. */
  check: RolloutCheck | null;
  /** Metrics measured before this step is written (as `check`); absent when the rollout has none. */
  analysis?: RolloutMetric[];
  /**
   * The rollout's own check and analysis, whichever step this is (`check` and `analysis` above are this step's, none
   * for the first): what guards every later step, so that what the rollout commits to is all in the plan.
   */
  gates: RolloutGates;
  /** The weights the rollout started from (written back in one request when a check fails). */
  from: Record<string, number>;
  /** Digest of the manifest's weights the rollout moves toward (kept in the owner marker). */
  target: string;
  /** The weights the rollout ends at: the manifest's, children by id. A step writes step `step` of the way from `from` to them. */
  final: Record<string, number>;
  /** Why the rollout halted (`halted`, `halt`); null otherwise. */
  halted_reason: string | null;
  /** Why the rollout waits for a person (status `paused`): `pause step 2 of 4`, an inconclusive analysis. Absent otherwise. */
  paused_reason?: string;
}

export interface WeightedBackendChange {
  kind: "weighted_backend";
  action: WeightedBackendAction;
  /** `weighted_backend.<name>`; an orphan without a free name uses its id. */
  address: string;
  /** The manifest name (for an orphan, the name in its marker). */
  name: string;
  /** The live id; null for a create. */
  id: string | null;
  /** The owner marker the live object carried (adopt: null; takeover: another stack's; rename: the old name). */
  previous_owner: OwnerMarker | null;
  /** Fingerprint of the live object this change was planned against; null for a create. */
  fingerprint: string | null;
  /** Where the manifest declares the object, `file:line:col`; null for an orphan. */
  source: string | null;
  before: WeightedBackendValue | null;
  after: WeightedBackendValue | null;
  /**
   * Differences of description and metadata (children are in `weights`). For a create every field is an `add`,
   * for a delete a `remove`.
   */
  diffs: FieldDiff[];
  /** Every child of either side, sorted by `child`. */
  weights: WeightChange[];
  request: PlannedRequest<"POST" | "PATCH" | "DELETE", WeightedBackendBody>;
  /** Body keys that are manifest names, mapped to the address of the create that gives their id. */
  refs: Record<string, string>;
  /** Addresses of the changes that must succeed before this one runs. */
  depends_on: string[];
  /** Sentences a reviewer should read (why an object was matched as it was). */
  notes: string[];
  /** The step of a progressive rollout (`action: rollout` only). */
  rollout?: RolloutStep;
}

/** Settings of a module as compared and sent (all client-settable fields, defaults filled). */
export type ModuleSettings = Record<string, JsonValue>;

export interface ModuleChange {
  kind: ModuleKind;
  /** `replace` is a PUT of the whole module (whether it existed or not); `delete` removes it. */
  action: ModuleAction;
  /** `edge_route.<edge>/<route>.saml` or `.circuit_breaker`. */
  address: string;
  edge: string;
  route: string;
  /** Fingerprint of the live module as read (the fingerprint of `null` when it was unset). */
  fingerprint: string;
  source: string | null;
  /** Client-settable fields of the live module; null when it is unset. */
  before: ModuleSettings | null;
  after: ModuleSettings | null;
  /** Field by field; every field is an `add` when the module is unset live, a `remove` when it is deleted. */
  diffs: FieldDiff[];
  request: PlannedRequest<"PUT" | "DELETE", ModuleSettings>;
  depends_on: string[];
  notes: string[];
  /** Set on a PUT that sets again a module the stack's inventory records and that was deleted outside edgeplan (see `drift`). */
  recreates?: true;
  /** What a reviewer must do because of this change (re-creating a SAML module gives it a new SP certificate); absent when none. */
  warnings?: string[];
}

/**
 * A change made outside edgeplan, since the last apply, to an object the stack manages, as far as edgeplan's own
 * records tell it (src/core/drift.ts says what counts). `deleted`: the object is recorded and gone live.
 */
export interface Drift {
  address: string;
  what: "deleted" | "changed";
  /** How edgeplan knows, and what the plan does about it. */
  reason: string;
  /** The fields that differ, from what edgeplan last wrote (`before`) to what is live (`after`); empty when edgeplan kept no values. */
  diffs: FieldDiff[];
}

/**
 * A write to one of a stack's inventory objects (src/model/inventory.ts), which record the route modules the stack
 * owns: `create` a new object, `update` (PATCH with the full body) or `delete` one left empty. `before`/`after` are
 * its entries by module address; `diffs` say, per module, `add` (record ownership), `remove` (forget it) or
 * `change` (the protect flag). An entry moved by `--takeover` is a write to the other stack's inventory too.
 */
export interface InventoryChange {
  kind: "inventory";
  action: "create" | "update" | "delete";
  /** `inventory.<stack>#<n>`: the stack's objects numbered from 1, in id order, new ones last. */
  address: string;
  /** The stack whose inventory this object is. */
  stack: string;
  /** The live id; null for a create. */
  id: string | null;
  /** Fingerprint of the live object this change was planned against; null for a create. */
  fingerprint: string | null;
  source: null;
  before: Record<string, { protect?: true }> | null;
  after: Record<string, { protect?: true }> | null;
  diffs: FieldDiff[];
  request: PlannedRequest<"POST" | "PATCH" | "DELETE", WeightedBackendBody>;
  depends_on: string[];
  notes: string[];
}

export type Change = WeightedBackendChange | ModuleChange | InventoryChange;

/** A live object owned by the stack that no manifest names. */
export interface Orphan {
  /** `weighted_backend.<name>`, or a route module's address (a module its stack's inventory records). */
  address: string;
  /** The weighted backend's id; for a module, the id of the inventory object that records it. */
  id: string;
  name: string;
  protected: boolean;
  /** `delete` when the plan deletes it (with --prune), else `keep`. */
  action: "delete" | "keep";
  /** Why it is kept or deleted, as a sentence. */
  reason: string;
}

export interface Risk {
  /** A built-in rule (RISK_RULES), or the name of a policy of level `ack` whose expression was false. */
  rule: string;
  addresses: string[];
  /** What the risk is and how to proceed. */
  message: string;
}

/** How much a policy's violation weighs: `warn` is shown, `ack` is a risk (`--ack NAME`), `deny` refuses the plan. */
export type PolicyLevel = "warn" | "ack" | "deny";
export const POLICY_LEVELS: readonly PolicyLevel[] = ["deny", "ack", "warn"];

/** One policy that did not hold for one change (or for the plan): its expression was false, or could not be evaluated. */
export interface PolicyResult {
  rule: string;
  level: PolicyLevel;
  /** The change's address; null for a rule over the whole plan (`match.scope: plan`). */
  address: string | null;
  /** The policy's description, or why its expression could not be evaluated. */
  message: string;
  /** True when the expression could not be evaluated (the message says why). */
  error: boolean;
}

/** The policies of the project file, judged over a plan: how many were evaluated, how many held, and each violation. */
export interface PlanPolicies {
  /** Number of policies defined. */
  rules: number;
  /** Evaluations made (one per matching change and policy, one per plan-scoped policy). */
  evaluated: number;
  /** Evaluations whose expression was true. */
  passed: number;
  /** Sorted by level (deny, ack, warn), then rule, then address. */
  results: PolicyResult[];
}

/** The generated SAML fields a person copies into the IdP. Null values are known after apply. */
export interface SamlOutput {
  address: string;
  edge: string;
  route: string;
  known_after_apply: boolean;
  entity_id: string | null;
  assertion_consumer_service_url: string | null;
  single_logout_url: string | null;
  metadata_url: string | null;
  certificate_sha256: string | null;
}

export interface PlanSummary {
  create: number;
  update: number;
  delete: number;
  adopt: number;
  takeover: number;
  rename: number;
  /** Rollout changes: steps due, waiting or halted. */
  rollout: number;
  module_replace: number;
  module_delete: number;
  /** Orphans the plan leaves in place. */
  orphans_kept: number;
  /** Number of changes. */
  total: number;
}

/** A field that differs between the manifest and the live side and that `ignore_changes` leaves as it is live. */
export interface IgnoredDifference {
  address: string;
  /** The field as `ignore_changes` names it: `description`, `metadata.team`, `backends.<child>`, `saml.<field>`. */
  path: string;
  /** Where the manifest declares the object, `file:line:col`. */
  source: string | null;
}

/**
 * What applying the plan costs, when nothing fails: `requests` is exactly what `apply` sends from its first write to
 * its last convergence read (`writes`, one per change, plus `reads`, the reads that check convergence); the reads
 * that make the plan are not counted. `seconds` is the time those requests take under the rate limit and
 * concurrency in force (src/core/estimate.ts says how).
 */
export interface Estimate {
  requests: number;
  writes: number;
  reads: number;
  seconds: number;
  /** The client's request budget the time follows (`120/60s`), or null when there is none (`--rate-limit off`). */
  rate_limit: string | null;
  /** Requests in flight at once (`--concurrency`). */
  concurrency: number;
}

/** Where a saved plan was made (src/api/account.ts): `apply --plan` refuses it at another API or account. */
export interface PlanApi {
  /** The API's base URL, normalised, or `local:<file>` for the embedded server of `--local`. */
  url: string;
  /** sha256 (hex) of the API key salted with the URL: tells accounts (keys) apart without holding the key. */
  account: string;
}

/** The project file's environment a plan was made in, and the API it read: every rendering's header shows both. */
export interface PlanEnvironment {
  name: string;
  api_url: string;
}

export interface Plan {
  format_version: typeof PLAN_FORMAT_VERSION;
  stack: string;
  /** The environment (`--env`) the plan was made in; null when the project file defines none (absent in older saved plans). */
  environment?: PlanEnvironment | null;
  /** Only in a saved plan (`plan --out`): the API and account it was made for. */
  api?: PlanApi;
  /** True when `--target` or `--exclude` limited the plan: the rest of the stack was not planned. */
  targeted: boolean;
  /** Only when there is some: what changed outside edgeplan since the last apply, sorted by address. */
  drift?: Drift[];
  options: {
    prune: boolean;
    takeover: boolean;
    max_shift: number;
    max_deletes: number;
    /** The `--target` address patterns (empty: everything). */
    targets: string[];
    /** The `--exclude` address patterns. */
    excludes: string[];
  };
  summary: PlanSummary;
  risks: Risk[];
  /** Only when the project file defines policies: what they found. Apply computes it again, never reading the file's. */
  policies?: PlanPolicies;
  /** Sorted by address. */
  changes: Change[];
  orphans: Orphan[];
  outputs: SamlOutput[];
  /** Things a reviewer should know that are not changes (e.g. two objects carrying the same marker). */
  warnings: string[];
  /** Fields that differ and that `ignore_changes` leaves as they are live, sorted by address then path. */
  ignored: IgnoredDifference[];
  estimate: Estimate;
}

/** Address of a weighted backend. */
export function weightedBackendAddress(nameOrId: string): string {
  return `weighted_backend.${nameOrId}`;
}

/** Address of a stack's inventory object: its objects numbered from 1. */
export function inventoryAddress(stack: string, n: number): string {
  return `inventory.${stack}#${n}`;
}

/** Address of a module of a route. */
export function moduleAddress(edge: string, route: string, kind: ModuleKind): string {
  return `edge_route.${edge}/${route}.${kind}`;
}
