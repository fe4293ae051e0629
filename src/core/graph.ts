/**
 * The order of a plan's changes. One table (`ORDER_RULES`, after decK's order.go) says, per kind of change, which
 * other changes it waits for: a weighted backend is created before any object that references it, and deleted
 * after every update or delete that stops referencing it (creates top-down, deletes bottom-up); module changes
 * wait for nothing. `dependencyLevels` groups changes so that each level only needs the ones before it, which is
 * what an applier runs with bounded concurrency. Pure.
 */
import { InternalError } from "../model/errors.js";
import type { Change, Plan, WeightedBackendAction, WeightedBackendChange } from "../model/plan.js";

/** What a rule may look at: the changes by live id, and which live weighted backends reference each id. */
export interface OrderContext {
  /** Address of the change of each live weighted backend that has one, by id. */
  changeById: ReadonlyMap<string, string>;
  /** Ids of the live weighted backends whose children include the key. */
  liveParents: ReadonlyMap<string, readonly string[]>;
}

/** The reverse of the live children maps: for each child id, the ids of the weighted backends that reference it. */
export function buildLiveParents(live: ReadonlyArray<{ id: string; backends: Readonly<Record<string, number>> }>): Map<string, string[]> {
  const parents = new Map<string, string[]>();
  for (const parent of live) {
    for (const child of Object.keys(parent.backends)) {
      const list = parents.get(child);
      if (list) list.push(parent.id);
      else parents.set(child, [parent.id]);
    }
  }
  return parents;
}

type Rule = (change: Change, ctx: OrderContext) => string[];

/**
 * A write waits for the changes of every object it will reference: the creates of children that do not exist yet,
 * and the changes of live children. Children are written before their parents, so each PATCH links only to objects
 * already in their final shape and no state in between can hold a cycle the API refuses (ERR_NGROK_6524), as when
 * two objects swap parent and child.
 */
const waitForChildren: Rule = (change, ctx) => {
  if (change.kind !== "weighted_backend") return [];
  const out = Object.values(change.refs);
  for (const child of Object.keys(change.after?.backends ?? {})) {
    const address = ctx.changeById.get(child);
    if (address !== undefined && address !== change.address) out.push(address);
  }
  return out;
};

/** A delete waits for every change of a live object that referenced it (those changes stop referencing it). */
const waitForFormerParents: Rule = (change, ctx) => {
  if (change.kind !== "weighted_backend" || change.id === null) return [];
  const out: string[] = [];
  for (const parentId of ctx.liveParents.get(change.id) ?? []) {
    const address = ctx.changeById.get(parentId);
    if (address !== undefined && address !== change.address) out.push(address);
  }
  return out;
};

const noWait: Rule = () => [];

/** The ordering table: one rule per kind of change. */
export const ORDER_RULES: Readonly<Record<WeightedBackendAction | "module", Rule>> = {
  create: waitForChildren,
  update: waitForChildren,
  adopt: waitForChildren,
  takeover: waitForChildren,
  rename: waitForChildren,
  delete: waitForFormerParents,
  module: noWait,
};

/** Fills `depends_on` of every change (sorted, unique) from the ordering table. */
export function buildDependencies(changes: Change[], ctx: OrderContext): void {
  for (const change of changes) {
    const rule = change.kind === "weighted_backend" ? ORDER_RULES[(change as WeightedBackendChange).action] : ORDER_RULES.module;
    change.depends_on = [...new Set(rule(change, ctx))].sort();
  }
}

/** The edges of the graph: `[address, dependency]` for every dependency, sorted. */
export function dependencyEdges(plan: Pick<Plan, "changes">): Array<[string, string]> {
  const edges: Array<[string, string]> = [];
  for (const change of plan.changes) for (const dep of change.depends_on) edges.push([change.address, dep]);
  return edges.sort((a, b) => (a[0] === b[0] ? cmp(a[1], b[1]) : cmp(a[0], b[0])));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Groups the plan's addresses into levels: level 0 depends on nothing, level n only on levels below n. Changes in
 * one level are independent and may run in parallel. Each level is sorted. Throws InternalError on a cycle or a
 * dependency that is not a change of the plan (the plan was built or edited wrongly).
 */
export function dependencyLevels(plan: Pick<Plan, "changes">): string[][] {
  const pending = new Map<string, Set<string>>();
  for (const change of plan.changes) pending.set(change.address, new Set(change.depends_on));
  for (const [address, deps] of pending) {
    for (const dep of deps) {
      if (!pending.has(dep)) throw new InternalError(`plan: ${address} depends on ${dep}, which is not a change of the plan`);
    }
  }
  // Kahn's algorithm, one frontier at a time.
  const remaining = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const [address, deps] of pending) {
    remaining.set(address, deps.size);
    for (const dep of deps) {
      const list = dependents.get(dep);
      if (list) list.push(address);
      else dependents.set(dep, [address]);
    }
  }
  const levels: string[][] = [];
  let frontier = [...remaining.entries()].filter(([, n]) => n === 0).map(([a]) => a).sort();
  let placed = 0;
  while (frontier.length > 0) {
    levels.push(frontier);
    placed += frontier.length;
    const next: string[] = [];
    for (const address of frontier) {
      for (const dependent of dependents.get(address) ?? []) {
        const n = (remaining.get(dependent) as number) - 1;
        remaining.set(dependent, n);
        if (n === 0) next.push(dependent);
      }
    }
    frontier = next.sort();
  }
  if (placed < pending.size) {
    const stuck = [...remaining.entries()].filter(([, n]) => n > 0).map(([a]) => a).sort();
    throw new InternalError(`plan: dependency cycle among ${stuck.join(", ")}`);
  }
  return levels;
}
