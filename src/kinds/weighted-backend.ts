/**
 * The weighted backend kind: owner markers in metadata, normalisation of both sides, field diffs, traffic shares,
 * the change of one object and the bodies of its writes. Pure.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import { canonicalJson, isJsonObject as isObject, isSortedPlain, sortedJson } from "../model/canonical.js";
import { InternalError } from "../model/errors.js";
import type { FieldDiff, JsonValue, WeightChange, WeightedBackendBody, WeightedBackendChange, WeightedBackendValue } from "../model/plan.js";
import { weightedBackendAddress, type WeightedBackendAction } from "../model/plan.js";
import { weightedBackendPath, WEIGHTED_BACKENDS_PATH } from "../model/paths.js";
import { pickFields } from "../model/wire.js";
import {
  formatPos,
  MARKER_KEY,
  weightedBackendFingerprint,
  type DesiredWeightedBackend,
  type LiveWeightedBackend,
  type OwnerMarker,
  type RolloutState,
} from "../model/state.js";
import { buildFieldDiff, diffRecords } from "./diff.js";
import { parseRolloutState } from "./weighted-backend-rollout.js";

/** Live metadata as compared: parsed when it is a JSON object, else the raw text. */
export interface ParsedMetadata {
  /** The parsed object with sorted keys, or the raw text when it is not a JSON object. */
  value: JsonValue;
  /** The owner marker, when the metadata is a JSON object whose `edgeplan` key is a well-formed marker. */
  marker: OwnerMarker | null;
  /** The metadata without the marker key (null when the metadata is not a JSON object). */
  user: Record<string, JsonValue> | null;
}

/**
 * Parses live metadata. Text that is not JSON, or JSON that is not an object, belongs to a foreign object with no
 * marker; so does an `edgeplan` key that is not `{stack: string, name: string, protect?: true}`.
 */
export function parseLiveMetadata(text: string): ParsedMetadata {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { value: text, marker: null, user: null };
  }
  if (!isObject(parsed)) return { value: text, marker: null, user: null };
  // Metadata edgeplan wrote is canonical JSON already: its parse is used as it is, without a sorted copy.
  const value = (isSortedPlain(parsed) ? parsed : sortedJson(parsed)) as Record<string, JsonValue>;
  const user: Record<string, JsonValue> = {};
  for (const key of Object.keys(value)) if (key !== MARKER_KEY) user[key] = value[key] as JsonValue;
  return { value, marker: parseMarker(value[MARKER_KEY]), user };
}

function parseMarker(raw: unknown): OwnerMarker | null {
  if (!isObject(raw)) return null;
  const { stack, name, protect } = raw;
  if (typeof stack !== "string" || typeof name !== "string" || stack === "" || name === "") return null;
  return buildMarker(stack, name, protect === true, parseRolloutState(raw.rollout));
}

/** The owner marker edgeplan writes for a manifest object, with the state of a rollout under way. */
export function buildMarker(stack: string, name: string, protect: boolean, rollout?: RolloutState): OwnerMarker {
  const marker: OwnerMarker = protect ? { stack, name, protect: true } : { stack, name };
  if (rollout) marker.rollout = rollout;
  return marker;
}

/** The full metadata of a managed object: the user's mapping plus the marker, keys sorted. */
export function buildMetadata(user: Record<string, unknown>, marker: OwnerMarker): Record<string, JsonValue> {
  return sortedJson({ ...user, [MARKER_KEY]: marker }) as Record<string, JsonValue>;
}

/** Sorts a backends map by key. */
export function sortedBackends(backends: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(backends).sort()) out[key] = backends[key] as number;
  return out;
}

/** The live object as compared (`parsed`: its metadata already parsed, to save parsing it again). */
export function buildLiveValue(live: LiveWeightedBackend, parsed?: ParsedMetadata): WeightedBackendValue {
  return {
    description: live.description,
    metadata: (parsed ?? parseLiveMetadata(live.metadata)).value,
    backends: sortedBackends(live.backends),
  };
}

/** Whether a backends map sends traffic anywhere (at least one weight above 0). */
export function hasTraffic(backends: Readonly<Record<string, number>>): boolean {
  return Object.values(backends).some((w) => w > 0);
}

/** A weight's share of the total in percent, one decimal; 0 when the total is 0. */
export function shareOf(weight: number, total: number): number {
  return total > 0 ? Math.round((weight / total) * 1000) / 10 : 0;
}

/** Exact share in percent (for risk thresholds, which must not depend on rounding). */
export function exactShareOf(weight: number, total: number): number {
  return total > 0 ? (weight / total) * 100 : 0;
}

function totalOf(backends: Readonly<Record<string, number>> | null): number {
  return backends ? Object.values(backends).reduce((s, w) => s + w, 0) : 0;
}

/**
 * Every child of either side with weights and shares before and after, sorted by key. `names` gives the name of a
 * child id; `pending` holds keys that are names of objects created by the same plan (their own names).
 */
export function buildWeights(
  before: Readonly<Record<string, number>> | null,
  after: Readonly<Record<string, number>> | null,
  names: Pick<ReadonlyMap<string, string>, "get">,
  pending: ReadonlySet<string>,
): WeightChange[] {
  const keys = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])].sort();
  const tb = totalOf(before);
  const ta = totalOf(after);
  return keys.map((child) => {
    const b = before && Object.hasOwn(before, child) ? (before[child] as number) : null;
    const a = after && Object.hasOwn(after, child) ? (after[child] as number) : null;
    return {
      child,
      name: pending.has(child) ? child : (names.get(child) ?? null),
      known_after_apply: pending.has(child),
      before: b,
      after: a,
      share_before: b === null ? null : shareOf(b, tb),
      share_after: a === null ? null : shareOf(a, ta),
      changed: b !== a,
    };
  });
}

/** The fields of a weighted backend compared field by field; its children are compared as weights (`buildWeights`). */
const RECORD_FIELDS = ["description", "metadata"] as const;

/** Field diffs of description and metadata (children are compared in `buildWeights`). */
export function diffWeightedBackend(before: WeightedBackendValue, after: WeightedBackendValue): FieldDiff[] {
  const diffs: FieldDiff[] = [];
  if (before.description !== after.description) diffs.push(buildFieldDiff("description", before.description, after.description));
  if (isObject(before.metadata) && isObject(after.metadata)) {
    diffs.push(...diffRecords(before.metadata, after.metadata, "metadata."));
  } else if (!equal(before.metadata, after.metadata)) {
    diffs.push(buildFieldDiff("metadata", before.metadata, after.metadata));
  }
  return diffs;
}

/**
 * The field diffs a change of a weighted backend shows: every field an `add` for a create (`before` null), a
 * `remove` for a delete (`after` null), else `diffWeightedBackend`.
 */
export function diffWeightedBackendSides(before: WeightedBackendValue | null, after: WeightedBackendValue | null): FieldDiff[] {
  if (before === null) return diffRecords({}, after === null ? {} : pickFields(after, RECORD_FIELDS), "", RECORD_FIELDS);
  if (after === null) return diffRecords(pickFields(before, RECORD_FIELDS), {}, "", RECORD_FIELDS);
  return diffWeightedBackend(before, after);
}

/** The full body of a create or update: a PATCH always carries every field (an absent `backends` empties the map). */
export function buildWeightedBackendBody(value: WeightedBackendValue): WeightedBackendBody {
  return {
    description: value.description,
    metadata: canonicalJson(value.metadata),
    backends: sortedBackends(value.backends),
  };
}

/**
 * A write of a rollout on `change`'s object: `backends` and the owner marker's rollout state `rollout` (undefined:
 * none, the rollout ends with this write), everything else as `change.after` holds it. Returns the value after the
 * write and its request with the full body (`buildWeightedBackendBody`): a rollout chooses weights and state, the
 * body comes from here. Throws InternalError when `change` has no managed value after it.
 */
export function buildRolloutWrite(
  change: WeightedBackendChange,
  backends: Readonly<Record<string, number>>,
  rollout: RolloutState | undefined,
): { after: WeightedBackendValue; request: WeightedBackendChange["request"] } {
  const metadata = change.after?.metadata;
  const marker = isObject(metadata) ? metadata[MARKER_KEY] : undefined;
  if (!change.after || !isObject(metadata) || !isObject(marker)) throw new InternalError(`${change.address}: only a managed object takes a rollout write`);
  const { rollout: _previous, ...owner } = marker;
  const nextMarker = rollout ? { ...owner, rollout } : owner;
  const after: WeightedBackendValue = {
    description: change.after.description,
    metadata: sortedJson({ ...metadata, [MARKER_KEY]: nextMarker }),
    backends: sortedBackends(backends),
  };
  return { after, request: { ...change.request, body: buildWeightedBackendBody(after) } };
}

/**
 * The body to send for a change, with every reference by name replaced by the id that the create of that name
 * returned. `idsByAddress` maps the address of each create already applied to its new id. Throws InternalError when
 * a reference has no id yet (the applier ran a change before one it depends on).
 */
export function resolveWeightedBackendBody(change: WeightedBackendChange, idsByAddress: ReadonlyMap<string, string> | Readonly<Record<string, string>>): WeightedBackendBody {
  const body = change.request.body;
  if (!body) throw new InternalError(`${change.address}: a ${change.action} sends no body`);
  const lookup = (address: string): string | undefined => (idsByAddress instanceof Map ? idsByAddress.get(address) : (idsByAddress as Record<string, string>)[address]);
  const backends: Record<string, number> = {};
  for (const [key, weight] of Object.entries(body.backends)) {
    const address = change.refs[key];
    if (address === undefined) {
      backends[key] = weight;
      continue;
    }
    const id = lookup(address);
    if (id === undefined) {
      throw new InternalError(`${change.address}: child ${key} has no id yet; ${address} must be applied first`);
    }
    backends[id] = weight;
  }
  return { description: body.description, metadata: body.metadata, backends: sortedBackends(backends) };
}

/**
 * The request to send for a change: its planned request as it stands, or, when its `refs` name objects created in
 * the same apply, the same request with those names in the body replaced by their ids (`resolveWeightedBackendBody`,
 * the one substitution apply makes). Throws InternalError as that does.
 */
export function resolveWeightedBackendRequest(
  change: WeightedBackendChange,
  idsByAddress: ReadonlyMap<string, string> | Readonly<Record<string, string>>,
): WeightedBackendChange["request"] {
  if (Object.keys(change.refs).length === 0) return change.request;
  return { ...change.request, body: resolveWeightedBackendBody(change, idsByAddress) };
}

/** What the change of one manifest's object is built from: the manifest, the live object it matched, its children. */
export interface WeightedBackendChangeInput {
  desired: DesiredWeightedBackend;
  /** The live object the manifest manages (null: a create) and its metadata, parsed. */
  live: LiveWeightedBackend | null;
  parsedLive: ParsedMetadata | undefined;
  action: Exclude<WeightedBackendAction, "delete">;
  previous: OwnerMarker | null;
  notes: string[];
  stack: string;
  /** Children with names resolved to ids where known, sorted; `pending`: keys that are names of new objects. */
  backends: Record<string, number>;
  pending: ReadonlySet<string>;
  /** The name shown beside a child id. */
  names: Pick<ReadonlyMap<string, string>, "get">;
}

/** The create, update, adopt, takeover or rename of one manifest's object; null when nothing differs. */
export function buildWeightedBackendChange(input: WeightedBackendChangeInput): WeightedBackendChange | null {
  const { desired: d, live, parsedLive } = input;
  const marker = buildMarker(input.stack, d.name, d.protect);
  // Most objects of a large stack are unchanged: they are compared field by field and dropped before anything is
  // built for them. Key order does not matter to the comparison, so the manifest's metadata is compared as it is;
  // when that says "different", the normalised values below decide (sorting never makes equal values differ).
  const same = live !== null && input.action === "update" && live.description === d.description && sameWeights(live.backends, input.backends);
  // The live metadata is the manifest's plus the marker: its keys but the marker's, then the marker as written.
  const user = parsedLive?.user;
  if (same && user && equal(user, d.metadata) && equal((parsedLive.value as Record<string, JsonValue>)[MARKER_KEY], marker)) return null;
  const after: WeightedBackendValue = { description: d.description, metadata: buildMetadata(d.metadata, marker), backends: { ...input.backends } };
  if (same && equal(parsedLive?.value, after.metadata)) return null;
  const before = live === null ? null : buildLiveValue(live, parsedLive);
  const refs: Record<string, string> = {};
  for (const p of [...input.pending].sort()) refs[p] = weightedBackendAddress(p);
  const common = {
    kind: "weighted_backend" as const,
    address: weightedBackendAddress(d.name),
    name: d.name,
    source: formatPos(d.source),
    after,
    refs,
    depends_on: [],
    notes: input.notes,
  };
  const weights = buildWeights(before?.backends ?? null, after.backends, input.names, input.pending);
  if (live === null || before === null) {
    const diffs = diffWeightedBackendSides(null, after);
    const request = { method: "POST" as const, path: WEIGHTED_BACKENDS_PATH, body: buildWeightedBackendBody(after) };
    return { ...common, action: "create", id: null, previous_owner: null, fingerprint: null, before: null, diffs, weights, request };
  }
  const request = { method: "PATCH" as const, path: weightedBackendPath(live.id), body: buildWeightedBackendBody(after) };
  const diffs = diffWeightedBackend(before, after);
  return { ...common, action: input.action, id: live.id, previous_owner: input.previous, fingerprint: weightedBackendFingerprint(live), before, diffs, weights, request };
}

/** The delete of an orphan: a live object of the stack that no manifest names. */
export function buildWeightedBackendDelete(
  live: LiveWeightedBackend,
  parsed: ParsedMetadata | undefined,
  marker: OwnerMarker,
  address: string,
  names: Pick<ReadonlyMap<string, string>, "get">,
): WeightedBackendChange {
  const before = buildLiveValue(live, parsed);
  return {
    kind: "weighted_backend",
    action: "delete",
    address,
    name: marker.name,
    id: live.id,
    previous_owner: marker,
    fingerprint: weightedBackendFingerprint(live),
    source: null,
    before,
    after: null,
    diffs: diffWeightedBackendSides(before, null),
    weights: buildWeights(before.backends, null, names, new Set()),
    request: { method: "DELETE", path: weightedBackendPath(live.id), body: null },
    refs: {},
    depends_on: [],
    notes: [`orphan: no manifest names "${marker.name}" and --prune is given`],
  };
}

/** Two backends maps with the same children and weights, whatever their key order. */
export function sameWeights(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (!Object.hasOwn(b, key) || a[key] !== b[key]) return false;
  return true;
}
