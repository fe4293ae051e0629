/**
 * `buildPlan`: the pure function from (desired, live, options) to a Plan. It matches manifests to live objects by
 * `id:` or owner marker (README, "Plan and apply"), proposes renames instead of delete + create, diffs the normalised
 * sides field by field, orders the changes, and names the risks and outputs. Same input, same Plan.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import { canonicalJson } from "../model/canonical.js";
import type { Diagnostic } from "../model/errors.js";
import { ManifestError } from "../model/errors.js";
import type {
  Change,
  Orphan,
  Plan,
  PlanSummary,
  WeightedBackendAction,
  WeightedBackendValue,
} from "../model/plan.js";
import { PLAN_FORMAT_VERSION, weightedBackendAddress } from "../model/plan.js";
import { ID_PREFIX } from "../model/wire.js";
import type {
  DesiredEdgeRoute,
  DesiredState,
  DesiredWeightedBackend,
  LiveRoute,
  LiveState,
  LiveWeightedBackend,
  OwnerMarker,
  SourcePos,
} from "../model/state.js";
import { MARKER_KEY } from "../model/state.js";
import {
  buildLiveValue,
  buildMarker,
  buildMetadata,
  buildWeightedBackendBody,
  buildWeights,
  diffWeightedBackend,
  parseLiveMetadata,
  sortedBackends,
  sortedJson,
  WEIGHTED_BACKENDS_PATH,
  type ParsedMetadata,
} from "../kinds/weighted-backend.js";
import { SAML } from "../kinds/saml.js";
import { CIRCUIT_BREAKER } from "../kinds/circuit-breaker.js";
import { diffRecords } from "./diff.js";
import { buildDependencies, buildLiveParents } from "./graph.js";
import { buildModuleChange, formatPos } from "./modules.js";
import { buildOutputs } from "./outputs.js";
import { buildRisks, defaultMaxDeletes } from "./risks.js";

export interface PlanOptions {
  /** The stack whose owner markers this plan manages. */
  stack: string;
  /** Delete orphans (owned objects no manifest names), except protected ones. */
  prune: boolean;
  /** Allow `id:` to adopt objects that carry another stack's marker. */
  takeover: boolean;
  /** `traffic-shift` threshold in percentage points (default 50). */
  maxShift: number;
  /** `mass-delete` threshold; default: max(10, 30 % of the stack's live objects). */
  maxDeletes?: number;
}

export const DEFAULT_MAX_SHIFT = 50;

interface Match {
  desired: DesiredWeightedBackend;
  live: LiveWeightedBackend | null;
  action: Exclude<WeightedBackendAction, "delete">;
  previous: OwnerMarker | null;
  notes: string[];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Children of a desired object with names resolved to ids where the id is known. */
interface Resolved {
  backends: Record<string, number>;
  /** Keys of `backends` that are names of objects this plan creates. */
  pending: ReadonlySet<string>;
}

/**
 * Builds the plan. Pure and deterministic: changes, orphans, risks and outputs are sorted, and every map is
 * built with sorted keys, so the same input renders to the same bytes.
 *
 * Throws ManifestError (every problem at once, each `file:line:col: message`) for inputs no plan can satisfy: an
 * `id:` that does not exist live, an `id:` owned by another stack without `takeover`, an `id:` adopted twice, a
 * route the live side lacks, two children that name the same object, children that lead back to their parent
 * through an id.
 */
export function buildPlan(desired: DesiredState, live: LiveState, options: PlanOptions): Plan {
  const { stack } = options;
  const diagnostics: Diagnostic[] = [];
  const error = (pos: SourcePos, message: string): void => {
    diagnostics.push({ severity: "error", pos, message });
  };
  const warnings: string[] = [];

  const desiredWbs = [...desired.weightedBackends].sort((a, b) => cmp(a.name, b.name) || comparePos(a.source, b.source));
  const desiredNames = new Set(desiredWbs.map((d) => d.name));
  const liveWbs = [...live.weightedBackends].sort((a, b) => cmp(a.id, b.id)); // id order is creation order
  const liveById = new Map(liveWbs.map((l) => [l.id, l]));
  const parsed = new Map<string, ParsedMetadata>(liveWbs.map((l) => [l.id, parseLiveMetadata(l.metadata)]));
  const markerOf = (id: string): OwnerMarker | null => parsed.get(id)?.marker ?? null;
  const posOf = (d: DesiredWeightedBackend, field: string): SourcePos => d.fieldSources?.[field] ?? d.source;

  for (let i = 1; i < desiredWbs.length; i++) {
    const [prev, cur] = [desiredWbs[i - 1] as DesiredWeightedBackend, desiredWbs[i] as DesiredWeightedBackend];
    if (prev.name === cur.name) {
      error(cur.source, `weighted backend "${cur.name}" is also declared at ${formatPos(prev.source)}; names must be unique`);
    }
  }

  // 1. Match manifests to live objects: first by `id:`, then by owner marker.
  const matches = new Map<string, Match>();
  const claimedBy = new Map<string, string>(); // live id -> desired name
  for (const d of desiredWbs) {
    if (d.id === undefined) continue;
    const l = liveById.get(d.id);
    if (!l) {
      error(posOf(d, "id"), `weighted backend "${d.name}": id ${d.id} does not exist in this account; correct the id, or remove \`id:\` to create a new object`);
      continue;
    }
    const other = claimedBy.get(l.id);
    if (other !== undefined) {
      error(posOf(d, "id"), `weighted backend "${d.name}": id ${d.id} is already adopted by "${other}"; an object can be adopted by one manifest only`);
      continue;
    }
    const marker = markerOf(l.id);
    let match: Match;
    if (marker === null) {
      match = { desired: d, live: l, action: "adopt", previous: null, notes: [`adopted by id: ${l.id} carries no owner marker, so the plan adds one`] };
    } else if (marker.stack !== stack) {
      if (!options.takeover) {
        error(
          posOf(d, "id"),
          `weighted backend "${d.name}": ${l.id} belongs to stack "${marker.stack}" (as "${marker.name}"); edgeplan never changes another stack's objects: pass --takeover to take it over, or remove \`id:\``,
        );
        continue;
      }
      match = {
        desired: d,
        live: l,
        action: "takeover",
        previous: marker,
        notes: [`taken over from stack "${marker.stack}" (where it is "${marker.name}") because --takeover is given`],
      };
    } else if (marker.name !== d.name) {
      match = {
        desired: d,
        live: l,
        action: "rename",
        previous: marker,
        notes: [`adopted by id: ${l.id} is "${marker.name}" of this stack; the plan renames it to "${d.name}"`],
      };
    } else {
      match = { desired: d, live: l, action: "update", previous: marker, notes: [] };
    }
    matches.set(d.name, match);
    claimedBy.set(l.id, d.name);
  }

  const ownedByName = new Map<string, LiveWeightedBackend[]>();
  for (const l of liveWbs) {
    const marker = markerOf(l.id);
    if (marker?.stack !== stack) continue;
    const list = ownedByName.get(marker.name);
    if (list) list.push(l);
    else ownedByName.set(marker.name, [l]);
  }
  const creates: DesiredWeightedBackend[] = [];
  for (const d of desiredWbs) {
    if (d.id !== undefined || matches.has(d.name)) continue;
    const candidates = (ownedByName.get(d.name) ?? []).filter((l) => !claimedBy.has(l.id));
    const first = candidates[0];
    if (!first) {
      creates.push(d);
      continue;
    }
    matches.set(d.name, { desired: d, live: first, action: "update", previous: markerOf(first.id), notes: [] });
    claimedBy.set(first.id, d.name);
    if (candidates.length > 1) {
      const rest = candidates.slice(1).map((l) => l.id);
      warnings.push(
        `${weightedBackendAddress(d.name)}: ${candidates.length} objects carry the marker of "${d.name}" in stack "${stack}"; ` +
          `the oldest, ${first.id}, is the match, and ${rest.join(", ")} ${rest.length === 1 ? "is an orphan" : "are orphans"}`,
      );
    }
  }

  // 2. Renames: an orphan with the same spec as a new manifest object keeps its id (and every reference to it).
  // Repeated until nothing changes, because a rename gives an id to a name that another object's children use.
  const nameToId = new Map<string, string>();
  for (const m of matches.values()) if (m.live) nameToId.set(m.desired.name, m.live.id);
  const unclaimedOwned = (): LiveWeightedBackend[] => liveWbs.filter((l) => markerOf(l.id)?.stack === stack && !claimedBy.has(l.id));
  // Orphans by spec (description, user metadata, children), oldest first, so a rename is found without a scan.
  const specKey = (description: string, user: unknown, backends: Readonly<Record<string, number>>): string =>
    canonicalJson([description, user, sortedBackends(backends)]);
  const orphansBySpec = new Map<string, LiveWeightedBackend[]>();
  for (const l of unclaimedOwned()) {
    const key = specKey(l.description, (parsed.get(l.id) as ParsedMetadata).user, l.backends);
    const list = orphansBySpec.get(key);
    if (list) list.push(l);
    else orphansBySpec.set(key, [l]);
  }
  let progress = orphansBySpec.size > 0;
  while (progress && creates.length > 0) {
    progress = false;
    for (const d of [...creates]) {
      const resolved = resolveChildren(d, nameToId, desiredNames);
      if (resolved.pending.size > 0) continue;
      const candidates = orphansBySpec.get(specKey(d.description, sortedJson(d.metadata), resolved.backends));
      const orphan = candidates?.shift();
      if (!orphan) continue;
      const previous = markerOf(orphan.id) as OwnerMarker;
      matches.set(d.name, {
        desired: d,
        live: orphan,
        action: "rename",
        previous,
        notes: [
          `renamed from "${previous.name}": ${orphan.id} has the same description, metadata and children, so the plan keeps it (and every reference to it) and rewrites its marker instead of deleting and creating`,
        ],
      });
      claimedBy.set(orphan.id, d.name);
      nameToId.set(d.name, orphan.id);
      creates.splice(creates.indexOf(d), 1);
      progress = true;
    }
  }
  for (const d of creates) matches.set(d.name, { desired: d, live: null, action: "create", previous: null, notes: [] });

  // 3. Children: names resolved to ids; a name created by this plan stays a name until apply.
  const resolvedByName = new Map<string, Resolved>();
  for (const d of desiredWbs) {
    if (!matches.has(d.name)) continue; // an error was reported for it
    const resolved = resolveChildren(d, nameToId, desiredNames);
    const keys = Object.keys(d.backends);
    // Children given by id alone are distinct and known: only names need these checks.
    if (keys.some((k) => !k.includes("_"))) {
      const seen = new Map<string, string>();
      for (const key of keys.sort()) {
        if (!key.includes("_") && !desiredNames.has(key)) {
          error(posOf(d, `backends.${key}`), `weighted backend "${d.name}": child "${key}" is neither a backend id nor the name of a weighted backend in the manifests`);
        }
        const target = key.includes("_") ? key : (nameToId.get(key) ?? key);
        const first = seen.get(target);
        if (first !== undefined) {
          error(posOf(d, `backends.${key}`), `weighted backend "${d.name}": children "${first}" and "${key}" are the same object (${target}); keep one of them`);
        } else seen.set(target, key);
      }
    }
    resolvedByName.set(d.name, resolved);
  }

  // 3b. Children that lead back to their parent through an id (names alone are checked by the loader): the API
  // refuses such a cycle (ERR_NGROK_6524), and no order of writes could reach it.
  // A cycle through an id needs a manifest whose children name a weighted backend by id; usually none does.
  const idChildren = desiredWbs.some((d) => Object.keys(d.backends).some((key) => key.startsWith(`${ID_PREFIX.weightedBackend}_`)));
  if (idChildren) {
    const unmanaged = new Map(liveWbs.filter((l) => !claimedBy.has(l.id)).map((l) => [l.id, l.backends]));
    reportIdCycles(desiredWbs.filter((d) => resolvedByName.has(d.name)), nameToId, desiredNames, unmanaged, (d, key, path) =>
      error(
        posOf(d, `backends.${key}`),
        `weighted backend "${d.name}": its children lead back to it (${path.join(" -> ")}); the API refuses cycles, remove one of these references`,
      ),
    );
  }

  // 4. Routes: every route the manifests name must have been read.
  const liveRoutes = new Map(live.routes.map((r) => [`${r.edge}/${r.route}`, r]));
  const desiredRoutes = [...desired.edgeRoutes].sort((a, b) => cmp(`${a.edge}/${a.route}`, `${b.edge}/${b.route}`) || comparePos(a.source, b.source));
  const routePairs: Array<{ desired: DesiredEdgeRoute; live: LiveRoute }> = [];
  for (let i = 0; i < desiredRoutes.length; i++) {
    const r = desiredRoutes[i] as DesiredEdgeRoute;
    const prev = desiredRoutes[i - 1];
    if (prev && prev.edge === r.edge && prev.route === r.route) {
      error(r.source, `edge route ${r.edge}/${r.route} is also declared at ${formatPos(prev.source)}; each route may appear once`);
      continue;
    }
    const lr = liveRoutes.get(`${r.edge}/${r.route}`);
    if (!lr) {
      if (r.saml.state !== "unmanaged" || r.circuit_breaker.state !== "unmanaged") {
        error(r.source, `edge route ${r.edge}/${r.route} does not exist in this account; check the edge and route ids`);
      }
      continue;
    }
    routePairs.push({ desired: r, live: lr });
  }

  if (diagnostics.some((d) => d.severity === "error")) throw new ManifestError(sortDiagnostics(diagnostics));

  // 5. Orphans: owned by the stack, named by no manifest. Deleted only with prune, never when protected or when
  // something that stays still references them (the API would refuse the delete).
  // An orphan is addressed by the name in its marker, or by its id when a manifest or an earlier orphan has that
  // name (names never contain "_", so an id never meets a name).
  const usedNames = new Set(desiredNames);
  const orphans = unclaimedOwned().map((l) => {
    const marker = markerOf(l.id) as OwnerMarker;
    const taken = usedNames.has(marker.name);
    usedNames.add(marker.name);
    // A manifest that adopts another object by id leaves the object that carried its name's marker behind.
    const byId = matches.get(marker.name);
    if (byId?.desired.id !== undefined && byId.live) {
      let fate = "run with --prune to delete it, or adopt it under another name";
      if (options.prune) fate = marker.protect === true ? "it is protected, so it is kept" : "--prune deletes it";
      warnings.push(
        `${weightedBackendAddress(marker.name)}: adopted by id ${byId.live.id}, while ${l.id} carries the marker of ` +
          `"${marker.name}" in stack "${stack}"; ${l.id} is an orphan: ${fate}`,
      );
    }
    return { live: l, marker, address: weightedBackendAddress(taken ? l.id : marker.name) };
  });
  const deleting = new Set(options.prune ? orphans.filter((o) => o.marker.protect !== true).map((o) => o.live.id) : []);
  const keptReason = new Map<string, string>();
  // Who references each id once the plan is applied: live objects (with their manifest's children when a manifest
  // names them) and new objects. An object being deleted references nothing.
  const referrers = new Map<string, string[]>(); // child id -> addresses or ids of the objects that reference it
  const addReferrer = (child: string, by: string): void => {
    const list = referrers.get(child);
    if (list) list.push(by);
    else referrers.set(child, [by]);
  };
  const referrerIds = new Map<string, string>(); // the label of a referrer -> its live id, when it has one
  // Only references to objects being deleted matter, and most plans delete nothing: nothing else is recorded.
  if (deleting.size > 0) {
    for (const l of liveWbs) {
      const name = claimedBy.get(l.id);
      const children = name !== undefined ? (resolvedByName.get(name)?.backends ?? {}) : l.backends;
      for (const child of Object.keys(children)) {
        if (child === l.id || !deleting.has(child)) continue;
        const label = name !== undefined ? weightedBackendAddress(name) : l.id;
        referrerIds.set(label, l.id);
        addReferrer(child, label);
      }
    }
    for (const d of creates) {
      for (const child of Object.keys(resolvedByName.get(d.name)?.backends ?? {})) {
        if (deleting.has(child)) addReferrer(child, weightedBackendAddress(d.name));
      }
    }
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const id of [...deleting].sort()) {
      const by = (referrers.get(id) ?? []).filter((label) => {
        const rid = referrerIds.get(label);
        return rid === undefined || !deleting.has(rid);
      });
      if (by.length === 0) continue;
      deleting.delete(id);
      keptReason.set(id, `kept although --prune is given: ${by.sort().join(", ")} still ${by.length === 1 ? "references" : "reference"} it, so the API would refuse the delete`);
      changed = true;
    }
  }
  const orphanList: Orphan[] = orphans.map(({ live: l, marker, address }) => {
    const isProtected = marker.protect === true;
    const action = deleting.has(l.id) ? "delete" : "keep";
    const reason =
      action === "delete"
        ? "no manifest names it; deleted because --prune is given"
        : isProtected
          ? "protected (its marker says protect: true): never deleted until a manifest takes it back with protect: false"
          : (keptReason.get(l.id) ?? "no manifest names it; run with --prune to delete it");
    return { address, id: l.id, name: marker.name, protected: isProtected, action, reason };
  });

  // 6. Weighted backend changes.
  // Names shown beside child ids: the manifest name, else the name in the child's marker of this stack.
  // Looked up for the children of changed objects only, so it is not built for every live object.
  const idToName = {
    get(id: string): string | undefined {
      const claimed = claimedBy.get(id);
      if (claimed !== undefined) return claimed;
      const marker = markerOf(id);
      return marker?.stack === stack ? marker.name : undefined;
    },
  };
  const changes: Change[] = [];
  for (const d of desiredWbs) {
    const m = matches.get(d.name) as Match;
    const resolved = resolvedByName.get(d.name) as Resolved;
    const marker = buildMarker(stack, d.name, d.protect);
    const parsedLive = m.live === null ? undefined : parsed.get(m.live.id);
    // Most objects of a large stack are unchanged: they are compared field by field and dropped before anything is
    // built for them. Key order does not matter to the comparison, so the manifest's metadata is compared as it is;
    // when that says "different", the normalised values below decide (sorting never makes equal values differ).
    const unchanged = (metadata: unknown): boolean =>
      m.live !== null &&
      m.action === "update" &&
      m.live.description === d.description &&
      sameWeights(m.live.backends, resolved.backends) &&
      equal(parsedLive?.value, metadata);
    if (unchanged({ ...d.metadata, [MARKER_KEY]: marker })) continue;
    const after: WeightedBackendValue = {
      description: d.description,
      metadata: buildMetadata(d.metadata, marker),
      backends: { ...resolved.backends }, // sorted by resolveChildren
    };
    if (unchanged(after.metadata)) continue;
    const before = m.live === null ? null : buildLiveValue(m.live, parsedLive);
    const refs: Record<string, string> = {};
    for (const p of [...resolved.pending].sort()) refs[p] = weightedBackendAddress(p);
    const address = weightedBackendAddress(d.name);
    const source = formatPos(d.source);
    if (m.live === null || before === null) {
      changes.push({
        kind: "weighted_backend",
        action: "create",
        address,
        name: d.name,
        id: null,
        previous_owner: null,
        fingerprint: null,
        source,
        before: null,
        after,
        diffs: diffRecords({}, { description: after.description, metadata: after.metadata }, "", ["description", "metadata"]),
        weights: buildWeights(null, after.backends, idToName, resolved.pending),
        request: { method: "POST", path: WEIGHTED_BACKENDS_PATH, body: buildWeightedBackendBody(after) },
        refs,
        depends_on: [],
        notes: m.notes,
      });
      continue;
    }
    changes.push({
      kind: "weighted_backend",
      action: m.action,
      address,
      name: d.name,
      id: m.live.id,
      previous_owner: m.previous,
      fingerprint: m.live.fingerprint,
      source,
      before,
      after,
      diffs: diffWeightedBackend(before, after),
      weights: buildWeights(before.backends, after.backends, idToName, resolved.pending),
      request: { method: "PATCH", path: `${WEIGHTED_BACKENDS_PATH}/${m.live.id}`, body: buildWeightedBackendBody(after) },
      refs,
      depends_on: [],
      notes: m.notes,
    });
  }
  for (const o of orphans) {
    if (!deleting.has(o.live.id)) continue;
    const before = buildLiveValue(o.live, parsed.get(o.live.id));
    changes.push({
      kind: "weighted_backend",
      action: "delete",
      address: o.address,
      name: o.marker.name,
      id: o.live.id,
      previous_owner: o.marker,
      fingerprint: o.live.fingerprint,
      source: null,
      before,
      after: null,
      diffs: diffRecords({ description: before.description, metadata: before.metadata }, {}, "", ["description", "metadata"]),
      weights: buildWeights(before.backends, null, idToName, new Set()),
      request: { method: "DELETE", path: `${WEIGHTED_BACKENDS_PATH}/${o.live.id}`, body: null },
      refs: {},
      depends_on: [],
      notes: [`orphan: no manifest names "${o.marker.name}" and --prune is given`],
    });
  }

  // 7. Module changes.
  for (const { desired: r, live: lr } of routePairs) {
    const saml = buildModuleChange(SAML, r.edge, r.route, r.saml, lr.saml, lr.fingerprints.saml);
    if (saml) {
      if (r.saml.state === "present" && r.saml.idpMetadataFile) saml.notes.push(`IdP metadata from ${r.saml.idpMetadataFile}`);
      changes.push(saml);
    }
    const cb = buildModuleChange(CIRCUIT_BREAKER, r.edge, r.route, r.circuit_breaker, lr.circuit_breaker, lr.fingerprints.circuit_breaker);
    if (cb) changes.push(cb);
  }

  changes.sort((a, b) => cmp(a.address, b.address));
  const changeById = new Map<string, string>();
  for (const c of changes) if (c.kind === "weighted_backend" && c.id !== null) changeById.set(c.id, c.address);
  buildDependencies(changes, { changeById, liveParents: buildLiveParents(liveWbs) });

  // 8. Risks, outputs, summary.
  const stackObjects =
    liveWbs.filter((l) => markerOf(l.id)?.stack === stack).length +
    routePairs.reduce(
      (n, { desired: r, live: lr }) =>
        n + (r.saml.state !== "unmanaged" && lr.saml ? 1 : 0) + (r.circuit_breaker.state !== "unmanaged" && lr.circuit_breaker ? 1 : 0),
      0,
    );
  const maxDeletes = options.maxDeletes ?? defaultMaxDeletes(stackObjects);
  const risks = buildRisks(changes, { maxShift: options.maxShift, maxDeletes });

  return {
    format_version: PLAN_FORMAT_VERSION,
    stack,
    options: { prune: options.prune, takeover: options.takeover, max_shift: options.maxShift, max_deletes: maxDeletes },
    summary: summarise(changes, orphanList),
    risks,
    changes,
    orphans: orphanList,
    outputs: buildOutputs(routePairs),
    warnings,
  };
}

/**
 * Finds cycles among the manifests' weighted backends, following children given by name, by the id of an object a
 * manifest matches, or through live objects no manifest names (their live children). Calls `report` once per cycle
 * that passes through an id, at the reference that closes it, with the names (or ids) along it. A cycle of names
 * alone is the loader's error already.
 */
function reportIdCycles(
  desired: DesiredWeightedBackend[],
  nameToId: ReadonlyMap<string, string>,
  desiredNames: ReadonlySet<string>,
  unmanaged: ReadonlyMap<string, Readonly<Record<string, number>>>,
  report: (d: DesiredWeightedBackend, key: string, path: string[]) => void,
): void {
  const nameOfId = new Map<string, string>();
  for (const [name, id] of nameToId) nameOfId.set(id, name);
  const byName = new Map(desired.map((d) => [d.name, d]));
  // A node is a manifest's name, or the id of a live object no manifest names.
  const target = (key: string): string | undefined => {
    if (!key.includes("_")) return desiredNames.has(key) && byName.has(key) ? key : undefined;
    const name = nameOfId.get(key);
    if (name !== undefined) return byName.has(name) ? name : undefined;
    return unmanaged.has(key) ? key : undefined;
  };
  const edges = (node: string): Array<{ key: string; to: string }> =>
    Object.keys(byName.get(node)?.backends ?? unmanaged.get(node) ?? {})
      .sort()
      .flatMap((key) => {
        const to = target(key);
        return to !== undefined ? [{ key, to }] : [];
      });
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const { key, to } of edges(node)) {
      const s = state.get(to);
      if (s === "open") {
        const ring = stack.slice(stack.indexOf(to));
        // Reported at the last manifest on the ring, where a reference can be removed.
        const at = [...ring].reverse().find((n) => byName.has(n));
        const d = at === undefined ? undefined : byName.get(at);
        if (d === undefined) continue;
        const from = ring.indexOf(d.name);
        const path = [...ring.slice(from), ...ring.slice(0, from), d.name];
        const closing = edges(d.name).find((e) => e.to === path[1])?.key ?? key;
        const throughId = ring.some((n) => !byName.has(n)) || path.slice(1).some((n, i) => edges(path[i] as string).some((e) => e.to === n && e.key.includes("_")));
        if (throughId) report(d, closing, path);
      } else if (s === undefined) visit(to);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const d of desired) if (!state.has(d.name)) visit(d.name);
}

const NO_PENDING: ReadonlySet<string> = new Set<string>();

/** Two backends maps with the same children and weights, whatever their key order. */
function sameWeights(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (!Object.hasOwn(b, key) || a[key] !== b[key]) return false;
  return true;
}

function resolveChildren(d: DesiredWeightedBackend, nameToId: ReadonlyMap<string, string>, desiredNames: ReadonlySet<string>): Resolved {
  const backends: Record<string, number> = {};
  // Most objects name no object of the plan: they share one empty set instead of each making its own.
  let pending: Set<string> | undefined;
  let renamed = false;
  for (const key of Object.keys(d.backends).sort()) {
    const weight = d.backends[key] as number;
    if (key.includes("_")) {
      backends[key] = weight;
      continue;
    }
    const id = nameToId.get(key);
    if (id !== undefined) {
      backends[id] = weight;
      renamed = true;
    } else {
      backends[key] = weight;
      if (desiredNames.has(key)) (pending ??= new Set<string>()).add(key);
    }
  }
  // Keys went in sorted; only a name replaced by its id can be out of place.
  return { backends: renamed ? sortedBackends(backends) : backends, pending: pending ?? NO_PENDING };
}

function summarise(changes: Change[], orphans: Orphan[]): PlanSummary {
  const count = (kind: "wb" | "module", action: string): number =>
    changes.filter((c) => (kind === "wb") === (c.kind === "weighted_backend") && c.action === action).length;
  return {
    create: count("wb", "create"),
    update: count("wb", "update"),
    delete: count("wb", "delete"),
    adopt: count("wb", "adopt"),
    takeover: count("wb", "takeover"),
    rename: count("wb", "rename"),
    module_replace: count("module", "replace"),
    module_delete: count("module", "delete"),
    orphans_kept: orphans.filter((o) => o.action === "keep").length,
    total: changes.length,
  };
}

function comparePos(a: SourcePos, b: SourcePos): number {
  return cmp(a.file, b.file) || a.line - b.line || a.col - b.col;
}

function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  return [...diagnostics].sort(
    (a, b) => comparePos(a.pos, b.pos) || cmp(a.message, b.message),
  );
}

/** True when the plan has at least one change. */
export function planHasChanges(plan: Plan): boolean {
  return plan.changes.length > 0;
}
