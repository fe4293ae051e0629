/**
 * A stack's inventory of route modules: route modules carry no metadata, so the modules a stack manages are recorded
 * in objects of the API, weighted backends with no children whose metadata holds
 * `{"edgeplan": {"stack": S, "inventory": {"modules": {ADDRESS: {}, ADDRESS: {"protect": true}}}}}`. A stack has as
 * many such objects as its entries need under the API's metadata limit. They come with the listing of weighted
 * backends that every plan makes, so reading them costs no request. Plans, exports and prunes never show them as
 * weighted backends. Pure: parsing, building bodies, and packing entries into objects.
 */
import { canonicalJson, compareText, isJsonObject } from "./canonical.js";
import type { WeightedBackendBody } from "./plan.js";
import { bookkeepingRecord } from "./lease.js";
import { MARKER_KEY } from "./state.js";
import { LIMITS, utf8Bytes } from "./wire.js";

/** What the inventory says of one module: whether `protect: true` was declared for it (then it is never pruned). */
export interface InventoryEntry {
  protect?: true;
}

/** Entries by module address (`edge_route.<edge>/<route>.<kind>`), keys sorted. */
export type InventoryEntries = Record<string, InventoryEntry>;

/** One inventory object as read. */
export interface Inventory {
  id: string;
  stack: string;
  entries: InventoryEntries;
  /**
   * Fingerprint of the object as read (a saved plan's write to it is stale when it changes); empty until the plan
   * takes it (`weightedBackendFingerprint`).
   */
  fingerprint: string;
}

const MODULE_ADDRESS = /^edge_route\.edghts_[A-Za-z0-9]+\/edghtsrt_[A-Za-z0-9]+\.(saml|circuit_breaker)$/;

/** The inventory an object holds, or null when it is not an inventory object. Entries that are not module addresses are dropped. */
export function parseInventory(wb: { id: string; metadata: string }): Inventory | null {
  const found = bookkeepingRecord(wb.metadata, "inventory");
  if (found === null) return null;
  const marker = { stack: found.stack, inventory: found.record };
  const modules = marker.inventory.modules;
  const entries: InventoryEntries = {};
  if (isJsonObject(modules)) {
    for (const address of Object.keys(modules).sort(compareText)) {
      const value = modules[address];
      if (!MODULE_ADDRESS.test(address) || !isJsonObject(value)) continue;
      entries[address] = value.protect === true ? { protect: true } : {};
    }
  }
  return { id: wb.id, stack: marker.stack, entries, fingerprint: "" };
}

/** Whether an object is an inventory object (of any stack): plans, exports and prunes leave these out. */
export function isInventoryObject(wb: { id: string; metadata: string }): boolean {
  return parseInventory(wb) !== null;
}

/** The inventory objects of `stack` among `objects`, oldest (smallest id) first. */
export function inventoriesOf(objects: readonly { id: string; metadata: string }[], stack: string): Inventory[] {
  const found: Inventory[] = [];
  for (const wb of objects) {
    const inv = parseInventory(wb);
    if (inv !== null && inv.stack === stack) found.push(inv);
  }
  return found.sort((a, b) => compareText(a.id, b.id));
}

/** The body of an inventory object of `stack` holding `entries` (create, and every PATCH: always the full body). */
export function buildInventoryBody(stack: string, entries: InventoryEntries): WeightedBackendBody {
  return {
    description: `edgeplan inventory of stack ${stack}: the route modules it manages (see: edgeplan state list)`,
    metadata: canonicalJson({ [MARKER_KEY]: { inventory: { modules: sortEntries(entries) }, stack } }),
    backends: {},
  };
}

/** The entries with their keys sorted, each a fresh object. */
export function sortEntries(entries: InventoryEntries): InventoryEntries {
  const out: InventoryEntries = {};
  for (const address of Object.keys(entries).sort(compareText)) out[address] = entries[address]?.protect === true ? { protect: true } : {};
  return out;
}

/** Whether these entries fit one object: its metadata within the API's limit. */
export function entriesFit(stack: string, entries: InventoryEntries): boolean {
  return utf8Bytes(buildInventoryBody(stack, entries).metadata) <= LIMITS.metadataBytes;
}

/** What one inventory object of a stack must become: its id (null for a new one) and its entries before and after. */
export interface InventoryWrite {
  id: string | null;
  fingerprint: string | null;
  before: InventoryEntries | null;
  /** Null when the object goes (no entries left). */
  after: InventoryEntries | null;
}

/**
 * Which objects of `stack` must change so that its inventory holds exactly `wanted`, with the fewest writes: an
 * entry stays in the object that holds it (updated in place when its protect flag changes), an entry that goes is
 * removed from its object (an object left empty is deleted), and a new entry goes to the first object (by id) with
 * room, else to a new object. Deterministic: the same objects and entries give the same writes. An entry found in
 * two objects is kept in the first only.
 */
export function packInventory(stack: string, current: readonly Inventory[], wanted: InventoryEntries): InventoryWrite[] {
  const placed = new Set<string>();
  const objects = current.map((inv) => {
    const after: InventoryEntries = {};
    for (const address of Object.keys(inv.entries)) {
      const want = wanted[address];
      if (want === undefined || placed.has(address)) continue;
      placed.add(address);
      after[address] = want;
    }
    return { inv, after };
  });
  const fresh: InventoryEntries[] = [];
  for (const address of Object.keys(wanted).sort(compareText)) {
    if (placed.has(address)) continue;
    const entry = wanted[address] as InventoryEntry;
    const home = [...objects.map((o) => o.after), ...fresh].find((entries) => entriesFit(stack, { ...entries, [address]: entry }));
    if (home) home[address] = entry;
    else fresh.push({ [address]: entry });
  }
  const writes: InventoryWrite[] = [];
  for (const { inv, after } of objects) {
    const empty = Object.keys(after).length === 0;
    if (!empty && canonicalJson(sortEntries(after)) === canonicalJson(inv.entries)) continue;
    writes.push({ id: inv.id, fingerprint: inv.fingerprint, before: inv.entries, after: empty ? null : sortEntries(after) });
  }
  for (const entries of fresh) writes.push({ id: null, fingerprint: null, before: null, after: sortEntries(entries) });
  return writes;
}
