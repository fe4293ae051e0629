/**
 * The order of a plan's changes. One table (`ORDER_RULES`, after decK's order.go) says, per kind of change, which
 * other changes it waits for: a weighted backend is created before any object that references it, and deleted
 * after every update or delete that stops referencing it (creates top-down, deletes bottom-up); module changes
 * wait for nothing. `dependencyLevels` groups changes so that each level only needs the ones before it, which is
 * what an applier runs with bounded concurrency. And the cycles the API refuses: `findCycles` among the manifests'
 * names (the loader's check) and `findIdCycles` through ids and live objects (the plan's check). Pure.
 */
import { InternalError } from "../model/errors.js";
import type { Change, Plan, WeightedBackendAction, WeightedBackendChange } from "../model/plan.js";
import type { DesiredWeightedBackend } from "../model/state.js";
import { compareText } from "../model/canonical.js";

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
  rollout: waitForChildren,
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
  return edges.sort((a, b) => (a[0] === b[0] ? compareText(a[1], b[1]) : compareText(a[0], b[0])));
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
  let frontier = [...remaining.entries()]
    .filter(([, n]) => n === 0)
    .map(([a]) => a)
    .sort();
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
    const stuck = [...remaining.entries()]
      .filter(([, n]) => n > 0)
      .map(([a]) => a)
      .sort();
    throw new InternalError(`plan: dependency cycle among ${stuck.join(", ")}`);
  }
  return levels;
}

/**
 * The cycles of a graph, one per strongly connected component that holds one: the shortest path from the
 * component's first node (in `nodes` order) back to itself, as the list of nodes along it (first node repeated at
 * the end).
 */
export function findCycles(nodes: string[], edges: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  for (const component of stronglyConnected(nodes, edges)) {
    const first = component.length === 1 ? component[0] : nodes.find((n) => component.includes(n));
    if (first === undefined) continue;
    if (component.length === 1 && !(edges.get(first) ?? []).includes(first)) continue;
    cycles.push(cycleThrough(first, new Set(component), edges));
  }
  return cycles;
}

/**
 * Strongly connected components of a graph (Tarjan's algorithm, iterative so that a long chain of references
 * cannot exhaust the stack), in the order their first node was visited.
 */
function stronglyConnected(nodes: string[], edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let next = 0;
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; i: number }> = [{ node: start, i: 0 }];
    index.set(start, next);
    low.set(start, next);
    next++;
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; i: number };
      const succ = edges.get(frame.node) ?? [];
      if (frame.i < succ.length) {
        const w = succ[frame.i++] as string;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next);
          next++;
          stack.push(w);
          onStack.add(w);
          work.push({ node: w, i: 0 });
        } else if (onStack.has(w)) {
          low.set(frame.node, Math.min(low.get(frame.node) ?? 0, index.get(w) ?? 0));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) ?? 0, low.get(frame.node) ?? 0));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let w: string | undefined;
        do {
          w = stack.pop();
          if (w === undefined) break;
          onStack.delete(w);
          component.push(w);
        } while (w !== frame.node);
        out.push(component);
      }
    }
  }
  return out;
}

/** Shortest path from `start` back to itself inside `within` (breadth first), as the list of nodes visited. */
function cycleThrough(start: string, within: Set<string>, edges: Map<string, string[]>): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  for (let q = 0; q < queue.length; q++) {
    const node = queue[q] as string;
    for (const w of edges.get(node) ?? []) {
      if (!within.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let cur: string | undefined = node; cur !== undefined && cur !== start; cur = previous.get(cur)) path.splice(1, 0, cur);
        path.push(start);
        return path;
      }
      if (!previous.has(w)) {
        previous.set(w, node);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** A cycle through an id: the manifest where it is reported, the child key that closes it, the nodes along it. */
export interface IdCycle {
  d: DesiredWeightedBackend;
  key: string;
  path: string[];
}

/**
 * Finds cycles among the manifests' weighted backends, following children given by name, by the id of an object a
 * manifest matches, or through live objects no manifest names (their live children). One result per cycle that
 * passes through an id, at the reference that closes it, with the names (or ids) along it. A cycle of names alone
 * is the loader's error already (`findCycles`).
 */
export function findIdCycles(
  desired: DesiredWeightedBackend[],
  nameToId: ReadonlyMap<string, string>,
  desiredNames: ReadonlySet<string>,
  unmanaged: ReadonlyMap<string, Readonly<Record<string, number>>>,
): IdCycle[] {
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
  const found: IdCycle[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const closeRing = (to: string, key: string): void => {
    const ring = stack.slice(stack.indexOf(to));
    // Reported at the last manifest on the ring, where a reference can be removed.
    const at = [...ring].reverse().find((n) => byName.has(n));
    const d = at === undefined ? undefined : byName.get(at);
    if (d === undefined) return;
    const from = ring.indexOf(d.name);
    const path = [...ring.slice(from), ...ring.slice(0, from), d.name];
    const closing = edges(d.name).find((e) => e.to === path[1])?.key ?? key;
    const throughId = ring.some((n) => !byName.has(n)) || path.slice(1).some((n, i) => edges(path[i] as string).some((e) => e.to === n && e.key.includes("_")));
    if (throughId) found.push({ d, key: closing, path });
  };
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const { key, to } of edges(node)) {
      const s = state.get(to);
      if (s === "open") closeRing(to, key);
      else if (s === undefined) visit(to);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const d of desired) if (!state.has(d.name)) visit(d.name);
  return found;
}
