/**
 * What a stack owns, read from one listing of the weighted backends (`edgeplan state list`), and the one write that
 * stops managing an object without deleting it (`edgeplan state release ADDRESS`). Pure.
 */
import { canonicalJson, compareText } from "../model/canonical.js";
import { inventoriesOf, type InventoryEntries } from "../model/inventory.js";
import { parseLease } from "../model/lease.js";
import { weightedBackendPath } from "../model/paths.js";
import type { PlannedRequest, WeightedBackendBody } from "../model/plan.js";
import { weightedBackendAddress } from "../model/plan.js";
import { parseLiveMetadata } from "../kinds/weighted-backend.js";
import { inventoryRequest } from "./inventory.js";
import type { StackState } from "../model/state-schema.js";

/** An object of the listing, as much of it as these functions read. */
export interface ListedObject {
  id: string;
  description: string;
  metadata: string;
  backends: Record<string, number>;
}

/** What a stack owns (src/model/state-schema.ts). Every list is sorted by address, then id. */
export type { StackState };

/** What `stack` owns among the listed objects: weighted backends by owner marker, modules by inventory entry. */
export function buildStackState(objects: readonly ListedObject[], stack: string): StackState {
  const inventories = inventoriesOf(objects, stack);
  const leases = objects.flatMap((o) => {
    const lease = parseLease(o);
    return lease !== null && lease.stack === stack ? [o.id] : [];
  });
  const weighted_backends: StackState["weighted_backends"] = [];
  for (const o of objects) {
    const marker = parseLiveMetadata(o.metadata).marker;
    if (marker === null || marker.stack !== stack) continue;
    weighted_backends.push({ address: weightedBackendAddress(marker.name), name: marker.name, id: o.id, protected: marker.protect === true });
  }
  weighted_backends.sort((a, b) => compareText(a.address, b.address) || compareText(a.id, b.id));
  const modules: StackState["modules"] = [];
  const seen = new Set<string>();
  for (const inv of inventories) {
    for (const [address, entry] of Object.entries(inv.entries)) {
      if (seen.has(address)) continue;
      seen.add(address);
      modules.push({ address, protected: entry.protect === true, inventory: inv.id });
    }
  }
  modules.sort((a, b) => compareText(a.address, b.address));
  return { stack, weighted_backends, modules, inventory: inventories.map((i) => i.id), leases: [...leases].sort(compareText) };
}

/** The write that releases one object of a stack, and the sentence that says what it did. */
export interface Release {
  request: PlannedRequest<"PATCH" | "DELETE", WeightedBackendBody>;
  done: string;
}

/**
 * The write that stops `stack` managing `address` without deleting anything: a weighted backend (by its marker's
 * name, or by id) keeps its description, children and the user's metadata, without the owner marker; a module's
 * entry leaves the inventory object that records it (an object left empty is deleted). Null when the stack owns
 * nothing at that address.
 */
export function buildRelease(objects: readonly ListedObject[], stack: string, address: string): Release | null {
  const state = buildStackState(objects, stack);
  const module = state.modules.find((m) => m.address === address);
  if (module) {
    const inv = inventoriesOf(objects, stack).find((i) => i.id === module.inventory);
    const after: InventoryEntries = { ...inv?.entries };
    delete after[address];
    const left = Object.keys(after).length > 0 ? after : null;
    const request = inventoryRequest(stack, module.inventory, left) as Release["request"];
    return { request, done: `released ${address}: stack "${stack}" no longer manages it (its inventory ${module.inventory} forgot it); the module is kept` };
  }
  const owned = state.weighted_backends.filter((w) => w.address === address || weightedBackendAddress(w.id) === address);
  const wb = owned[0];
  const object = wb && objects.find((o) => o.id === wb.id);
  if (!wb || !object) return null;
  const user = parseLiveMetadata(object.metadata).user ?? {};
  const body: WeightedBackendBody = {
    description: object.description,
    metadata: Object.keys(user).length > 0 ? canonicalJson(user) : "",
    backends: { ...object.backends },
  };
  return {
    request: { method: "PATCH", path: weightedBackendPath(wb.id), body },
    done: `released ${wb.address} (${wb.id}): its owner marker of stack "${stack}" was removed; the object and its metadata are kept`,
  };
}
