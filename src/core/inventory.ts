/**
 * Ownership of route modules. Modules carry no metadata, so each stack records the modules it manages in its
 * inventory objects (src/model/inventory.ts), read with the listing of weighted backends. Before the plan is scoped,
 * `planModuleOwnership` refuses a module that another stack records (unless --takeover), finds the modules the stack
 * recorded that no manifest declares any more (orphans, deleted with --prune unless protected) and says what each
 * stack's inventory must hold afterwards. After scoping, `buildInventoryChanges` turns that into the writes to the
 * inventory objects, each after the module changes it records. Pure.
 */
import { compareText } from "../model/canonical.js";
import { packInventory, buildInventoryBody, parseInventory, type Inventory, type InventoryEntries, type InventoryEntry } from "../model/inventory.js";
import { inventoryAddress, moduleAddress, type Change, type FieldDiff, type InventoryChange, type ModuleChange, type ModuleKind, type Orphan } from "../model/plan.js";
import { weightedBackendPath, WEIGHTED_BACKENDS_PATH } from "../model/paths.js";
import { moduleFingerprint, weightedBackendFingerprint, type LiveRoute, type LiveWeightedBackend } from "../model/state.js";
import { buildModuleDelete, moduleSpec } from "../kinds/module.js";
import type { PlanProblems } from "./plan-index.js";
import type { RoutePair } from "./routes.js";

const KINDS: readonly ModuleKind[] = ["saml", "circuit_breaker"];

/** What the plan needs to decide the ownership of modules. */
export interface OwnershipInput {
  stack: string;
  takeover: boolean;
  prune: boolean;
  /** Every inventory object of the account (every stack). */
  inventories: readonly Inventory[];
  pairs: readonly RoutePair[];
  /** The routes of the modules the stack recorded and no manifest declares, as read (see `recordedReads`). */
  recorded: readonly LiveRoute[];
  /** Whether an address is in the plan's scope: modules out of it are neither orphans nor recorded nor forgotten. */
  inScope: (address: string) => boolean;
}

/** What `planModuleOwnership` decides. */
export interface Ownership {
  orphans: Orphan[];
  /** Deletes of orphan modules (with --prune, unprotected, still live). */
  deletes: ModuleChange[];
  /** Notes for the module changes whose module is taken over from another stack. */
  notes: Map<string, string>;
  /** The entries each affected stack's inventory must hold after the apply. */
  wanted: Map<string, InventoryEntries>;
}

/** The entries of every stack's inventory: the owner of each module address (the oldest object's, when two record it). */
function ownersOf(inventories: readonly Inventory[]): Map<string, Inventory> {
  const owners = new Map<string, Inventory>();
  for (const inv of [...inventories].sort((a, b) => compareText(a.id, b.id))) {
    for (const address of Object.keys(inv.entries)) if (!owners.has(address)) owners.set(address, inv);
  }
  return owners;
}

/** The entries a stack's inventory holds now, all objects together. */
export function entriesOf(inventories: readonly Inventory[], stack: string): InventoryEntries {
  const out: InventoryEntries = {};
  for (const inv of ofStack(inventories, stack)) for (const [a, e] of Object.entries(inv.entries)) out[a] ??= e;
  return out;
}

/** Why `stack` does not change a module that another stack's inventory records, and what to do. */
export function ownedElsewhere(address: string, owner: Inventory, stack: string): string {
  const kind = parseModuleAddress(address)?.kind ?? "module";
  return (
    `${address} is managed by stack "${owner.stack}" (its inventory ${owner.id} records it); ` +
    `stack "${stack}" does not change it: remove the ${kind} block, or take it over with --takeover`
  );
}

/** Refuses modules of other stacks, finds orphans, and says what each stack's inventory must hold. */
export function planModuleOwnership(input: OwnershipInput, problems: PlanProblems): Ownership {
  const owners = ownersOf(input.inventories);
  const wanted = new Map<string, InventoryEntries>([[input.stack, entriesOf(input.inventories, input.stack)]]);
  const ours = wanted.get(input.stack) as InventoryEntries;
  const declared = new Set<string>();
  const notes = new Map<string, string>();
  for (const { desired: r } of input.pairs) {
    for (const kind of KINDS) {
      const intent = r[kind];
      const address = moduleAddress(r.edge, r.route, kind);
      if (intent.state === "unmanaged" || !input.inScope(address)) continue;
      declared.add(address);
      const owner = owners.get(address);
      if (owner && owner.stack !== input.stack) {
        if (!input.takeover) {
          problems.error(intent.source, ownedElsewhere(address, owner, input.stack));
          continue;
        }
        const theirs = wanted.get(owner.stack) ?? entriesOf(input.inventories, owner.stack);
        delete theirs[address];
        wanted.set(owner.stack, theirs);
        notes.set(address, `taken over from stack "${owner.stack}" (--takeover): its entry moves to the inventory of stack "${input.stack}"`);
      }
      if (intent.state === "absent") delete ours[address];
      else ours[address] = r.protect === true ? { protect: true } : {};
    }
  }
  const { orphans, deletes } = planModuleOrphans(input, ours, declared);
  return { orphans, deletes, notes, wanted };
}

/**
 * The modules the stack recorded that no manifest declares: kept (listed), or deleted with --prune unless the entry
 * says protect. One that no longer exists live is only forgotten. Removes from `ours` the entries that go.
 */
function planModuleOrphans(input: OwnershipInput, ours: InventoryEntries, declared: ReadonlySet<string>): { orphans: Orphan[]; deletes: ModuleChange[] } {
  const routes = new Map(input.recorded.map((r) => [`${r.edge}/${r.route}`, r]));
  const recordedBy = new Map<string, string>();
  for (const inv of ofStack(input.inventories, input.stack)) for (const a of Object.keys(inv.entries)) if (!recordedBy.has(a)) recordedBy.set(a, inv.id);
  const orphans: Orphan[] = [];
  const deletes: ModuleChange[] = [];
  for (const address of Object.keys(ours).sort(compareText)) {
    if (declared.has(address) || !input.inScope(address)) continue;
    const at = parseModuleAddress(address);
    const route = at && routes.get(`${at.edge}/${at.route}`);
    const live = route && at ? route[at.kind] : null;
    if (!at || !route || live === null) {
      delete ours[address];
      continue;
    }
    const entry = ours[address] as InventoryEntry;
    const isProtected = entry.protect === true;
    const remove = input.prune && !isProtected;
    const reason = remove
      ? "no manifest declares it; deleted because --prune is given"
      : isProtected
        ? "protected (protect: true was declared for it): never deleted until a manifest declares it again with protect: false"
        : "no manifest declares it; run with --prune to delete it";
    orphans.push({ address, id: recordedBy.get(address) ?? "", name: address, protected: isProtected, action: remove ? "delete" : "keep", reason });
    if (!remove) continue;
    delete ours[address];
    const change = buildModuleDelete(moduleSpec(at.kind), at.edge, at.route, live, moduleFingerprint(route, at.kind));
    change.notes.push("no manifest declares it any more, and the inventory of this stack records it (an orphan)");
    deletes.push(change);
  }
  return { orphans, deletes };
}

/** The edge, route and kind of a module address, or null when it is not one. */
export function parseModuleAddress(address: string): { edge: string; route: string; kind: ModuleKind } | null {
  const m = /^edge_route\.([^/]+)\/([^.]+)\.(saml|circuit_breaker)$/.exec(address);
  return m ? { edge: m[1] as string, route: m[2] as string, kind: m[3] as ModuleKind } : null;
}

/**
 * The routes to read for the modules the stack recorded that the manifests do not declare (they may be orphans to
 * show or delete): by route, the kinds recorded. Empty for most plans, so they read nothing more.
 */
export function recordedReads(
  inventories: readonly Inventory[],
  stack: string,
  declared: ReadonlySet<string>,
  inScope: (address: string) => boolean,
): Array<{ edge: string; route: string; modules: ModuleKind[] }> {
  const byRoute = new Map<string, { edge: string; route: string; modules: ModuleKind[] }>();
  for (const address of Object.keys(entriesOf(inventories, stack)).sort(compareText)) {
    const at = parseModuleAddress(address);
    if (!at || declared.has(address) || !inScope(address)) continue;
    const key = `${at.edge}/${at.route}`;
    const read = byRoute.get(key) ?? { edge: at.edge, route: at.route, modules: [] };
    read.modules.push(at.kind);
    byRoute.set(key, read);
  }
  return [...byRoute.values()];
}

/** The addresses of the modules the manifests declare (present or absent). */
export function declaredModules(pairsOrRoutes: ReadonlyArray<{ edge: string; route: string; saml: { state: string }; circuit_breaker: { state: string } }>): Set<string> {
  const out = new Set<string>();
  for (const r of pairsOrRoutes) for (const kind of KINDS) if (r[kind].state !== "unmanaged") out.add(moduleAddress(r.edge, r.route, kind));
  return out;
}

/**
 * The writes that make each stack's inventory hold what `wanted` says (`packInventory`), numbered per stack, each
 * after the changes of the plan that touch a module it records or forgets: an entry is written once its module is
 * set, and forgotten once it is deleted (a failed module change leaves the inventory as it was).
 */
export function buildInventoryChanges(inventories: readonly Inventory[], wanted: ReadonlyMap<string, InventoryEntries>, changes: readonly Change[]): InventoryChange[] {
  const moduleChanges = new Set(changes.filter((c) => c.kind === "saml" || c.kind === "circuit_breaker").map((c) => c.address));
  const out: InventoryChange[] = [];
  for (const stack of [...wanted.keys()].sort(compareText)) {
    const current = ofStack(inventories, stack);
    let fresh = current.length;
    for (const write of packInventory(stack, current, wanted.get(stack) as InventoryEntries)) {
      const n = write.id === null ? ++fresh : current.findIndex((inv) => inv.id === write.id) + 1;
      const diffs = entryDiffs(write.before ?? {}, write.after ?? {});
      const action = write.id === null ? "create" : write.after === null ? "delete" : "update";
      out.push({
        kind: "inventory",
        action,
        address: inventoryAddress(stack, n),
        stack,
        id: write.id,
        fingerprint: write.fingerprint,
        source: null,
        before: write.before,
        after: write.after,
        diffs,
        request: inventoryRequest(stack, write.id, write.after),
        depends_on: diffs.map((d) => d.path).filter((a) => moduleChanges.has(a)),
        notes: [],
      });
    }
  }
  return out;
}

/** The request of an inventory write: POST a new object, PATCH the full body of one, DELETE one left empty. */
export function inventoryRequest(stack: string, id: string | null, after: InventoryEntries | null): InventoryChange["request"] {
  if (id === null) return { method: "POST", path: WEIGHTED_BACKENDS_PATH, body: buildInventoryBody(stack, after ?? {}) };
  if (after === null) return { method: "DELETE", path: weightedBackendPath(id), body: null };
  return { method: "PATCH", path: weightedBackendPath(id), body: buildInventoryBody(stack, after) };
}

/** Per module address: `add` (record), `remove` (forget) or `change` (the protect flag), sorted. */
export function entryDiffs(before: InventoryEntries, after: InventoryEntries): FieldDiff[] {
  const out: FieldDiff[] = [];
  for (const address of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort(compareText)) {
    const b = before[address];
    const a = after[address];
    if (b === undefined && a !== undefined) out.push({ path: address, op: "add", before: null, after: { ...a }, lines: null });
    else if (a === undefined && b !== undefined) out.push({ path: address, op: "remove", before: { ...b }, after: null, lines: null });
    else if (a !== undefined && b !== undefined && (a.protect === true) !== (b.protect === true))
      out.push({ path: address, op: "change", before: { ...b }, after: { ...a }, lines: null });
  }
  return out;
}

/** The inventory objects of one stack, oldest first. */
function ofStack(inventories: readonly Inventory[], stack: string): Inventory[] {
  return inventories.filter((inv) => inv.stack === stack).sort((a, b) => compareText(a.id, b.id));
}

/** The inventory objects among live weighted backends, each with the fingerprint of the object as read. */
export function readInventories(objects: readonly LiveWeightedBackend[]): Inventory[] {
  const out: Inventory[] = [];
  for (const wb of objects) {
    const inventory = parseInventory(wb);
    if (inventory !== null) out.push({ ...inventory, fingerprint: weightedBackendFingerprint(wb) });
  }
  return out;
}

/** A module the plan writes or records that another stack's inventory records now. */
export interface ClaimConflict {
  address: string;
  /** Where the manifest declares it, when the plan has a change of the module. */
  source: string | null;
  message: string;
}

/**
 * The plan's changes with its inventory writes made again from `fresh`, the inventories read under the account's
 * claim lease: each stack's entries as they are now, with the plan's own additions, removals and protect flags
 * applied (so an entry another stack wrote since the plan was made is kept, never lost). Conflicts instead when a
 * module the plan changes or records is now recorded by another stack that the plan does not take it from (it was
 * claimed or taken over since the plan read the inventories). Pure.
 */
export function rebaseInventoryChanges(changes: readonly Change[], stack: string, fresh: readonly Inventory[]): { changes: Change[]; conflicts: ClaimConflict[] } {
  const others = changes.filter((c) => c.kind !== "inventory");
  const delta = inventoryDelta(changes);
  const owners = ownersOf(fresh);
  const sources = new Map(others.map((c) => [c.address, c.source]));
  const claimed = new Set([...others.filter((c) => c.kind !== "weighted_backend").map((c) => c.address), ...addedBy(delta.get(stack))]);
  const conflicts: ClaimConflict[] = [];
  for (const address of [...claimed].sort(compareText)) {
    const owner = owners.get(address);
    if (!owner || owner.stack === stack || delta.get(owner.stack)?.get(address) === null) continue;
    conflicts.push({ address, source: sources.get(address) ?? null, message: ownedElsewhere(address, owner, stack) });
  }
  if (conflicts.length > 0) return { changes: [...changes], conflicts };
  const wanted = new Map<string, InventoryEntries>();
  for (const [s, entries] of delta) {
    const now = entriesOf(fresh, s);
    for (const [address, entry] of entries) {
      if (entry === null) delete now[address];
      else now[address] = entry;
    }
    wanted.set(s, now);
  }
  const rebased = [...others, ...buildInventoryChanges(fresh, wanted, others)].sort((a, b) => compareText(a.address, b.address));
  return { changes: rebased, conflicts };
}

/** Per stack, what the plan's inventory writes do to each entry: the entry written, or null when it is removed. */
function inventoryDelta(changes: readonly Change[]): Map<string, Map<string, InventoryEntry | null>> {
  const out = new Map<string, Map<string, InventoryEntry | null>>();
  for (const c of changes) {
    if (c.kind !== "inventory") continue;
    const entries = out.get(c.stack) ?? new Map<string, InventoryEntry | null>();
    for (const d of c.diffs) entries.set(d.path, d.op === "remove" ? null : (d.after as InventoryEntry));
    out.set(c.stack, entries);
  }
  return out;
}

function addedBy(entries: ReadonlyMap<string, InventoryEntry | null> | undefined): string[] {
  return entries ? [...entries].filter(([, e]) => e !== null).map(([a]) => a) : [];
}
