/**
 * The scope of a run: `--target` and `--exclude` address patterns (src/model/syntax.ts). Before the reads, the
 * desired state shrinks to what the scope can reach, so that what is out of scope is not read; after the plan is
 * built, only the changes and orphans in scope are kept, with the creates a kept change needs pulled in (and named
 * in a warning), and the deletes that would fail without a change left out turned back into kept orphans. Pure.
 */
import { EdgeplanError } from "../model/errors.js";
import type { Change, Orphan } from "../model/plan.js";
import { moduleAddress } from "../model/plan.js";
import type { DesiredEdgeRoute, DesiredState } from "../model/state.js";
import { closest } from "../model/suggest.js";
import { addressMatches, type ADDRESS_KINDS } from "../model/syntax.js";

export interface Scope {
  /** Address patterns; none: everything is a target. */
  targets: readonly string[];
  /** Address patterns left out, even when a target names them. */
  excludes: readonly string[];
}

/** True when the scope leaves something out: a targeted plan. */
export function isScoped(scope: Scope): boolean {
  return scope.targets.length > 0 || scope.excludes.length > 0;
}

/** Whether an address is in scope: some target names it (or there is no target), and no exclude does. */
export function inScope(scope: Scope, address: string): boolean {
  if (scope.targets.length > 0 && !scope.targets.some((t) => addressMatches(t, address))) return false;
  return !scope.excludes.some((e) => addressMatches(e, address));
}

/**
 * Whether any address of a kind can be in scope: a target's first segment matches the kind (or there is no
 * target), and no exclude names the whole kind (`weighted_backend`, `weighted_backend.*`).
 */
export function scopeReachesKind(scope: Scope, kind: (typeof ADDRESS_KINDS)[number]): boolean {
  const firstSegmentMatches = (p: string): boolean => new RegExp(`^${(p.split(/[./]/)[0] ?? "").replace(/\*/g, ".*")}$`).test(kind);
  if (scope.targets.length > 0 && !scope.targets.some(firstSegmentMatches)) return false;
  return !scope.excludes.some(
    (e) =>
      firstSegmentMatches(e) &&
      e
        .split(/[./]/)
        .slice(1)
        .every((s) => s === "*"),
  );
}

/**
 * The desired state a scoped plan reads and plans: with no weighted backend in reach, none (so none is listed);
 * each route with only its modules in scope managed (the others unmanaged, so not read), and routes left with no
 * managed module dropped (so no edge is read for them). Weighted backends in reach are all kept: a manifest out of
 * scope must still claim its live object, or it would be taken for an orphan.
 */
export function scopeDesired(desired: DesiredState, scope: Scope): DesiredState {
  if (!isScoped(scope)) return desired;
  const weightedBackends = scopeReachesKind(scope, "weighted_backend") ? desired.weightedBackends : [];
  const edgeRoutes: DesiredEdgeRoute[] = [];
  for (const r of desired.edgeRoutes) {
    const keep = (kind: "saml" | "circuit_breaker"): boolean => inScope(scope, moduleAddress(r.edge, r.route, kind));
    const scoped: DesiredEdgeRoute = {
      ...r,
      saml: keep("saml") ? r.saml : { state: "unmanaged" },
      circuit_breaker: keep("circuit_breaker") ? r.circuit_breaker : { state: "unmanaged" },
    };
    if (scoped.saml.state !== "unmanaged" || scoped.circuit_breaker.state !== "unmanaged") edgeRoutes.push(scoped);
  }
  return { weightedBackends, edgeRoutes };
}

/** What is left of a plan's changes and orphans in scope, and the warnings that say what the scope did. */
export interface Scoped {
  changes: Change[];
  orphans: Orphan[];
  warnings: string[];
}

/**
 * Keeps the changes and orphans in scope. A kept change that needs a create out of scope (a child referenced by
 * name that does not exist yet) pulls it in, with a warning; when an exclude names that create, the plan cannot be
 * made (EdgeplanError). A kept delete that waits for a change left out (a parent that still references the object)
 * is dropped, and its orphan kept with the reason. Dependencies on other changes left out are dropped: those
 * objects exist and keep their live shape.
 */
export function applyScope(changes: readonly Change[], orphans: readonly Orphan[], scope: Scope): Scoped {
  const byAddress = new Map(changes.map((c) => [c.address, c]));
  const kept = new Set(changes.filter((c) => inScope(scope, c.address)).map((c) => c.address));
  const warnings = pullInCreates(byAddress, kept, scope);
  const blocked = new Map<string, string>();
  for (let changed = true; changed; ) {
    changed = false;
    for (const address of [...kept].sort()) {
      const change = byAddress.get(address) as Change;
      const missing = change.depends_on.filter((d) => !kept.has(d));
      if (change.action !== "delete" || missing.length === 0) continue;
      kept.delete(address);
      blocked.set(address, missing.join(", "));
      changed = true;
    }
  }
  const keptChanges = changes.filter((c) => kept.has(c.address)).map((c) => ({ ...c, depends_on: c.depends_on.filter((d) => kept.has(d)) }) as Change);
  const keptOrphans = orphans
    .filter((o) => inScope(scope, o.address))
    .map((o): Orphan => {
      const by = blocked.get(o.address);
      if (by === undefined) return o;
      return { ...o, action: "keep", reason: `kept although --prune is given: it is deleted after ${by}, which the targets leave out` };
    });
  return { changes: keptChanges, orphans: keptOrphans, warnings };
}

/** Adds to `kept` every create a kept change waits for, transitively; returns a warning for each. */
function pullInCreates(byAddress: ReadonlyMap<string, Change>, kept: Set<string>, scope: Scope): string[] {
  const warnings: string[] = [];
  const queue = [...kept].sort();
  while (queue.length > 0) {
    const address = queue.shift() as string;
    for (const dep of (byAddress.get(address) as Change).depends_on) {
      const needed = byAddress.get(dep);
      if (kept.has(dep) || needed?.kind !== "weighted_backend" || needed.action !== "create") continue;
      if (scope.excludes.some((e) => addressMatches(e, dep))) {
        throw new EdgeplanError(
          `${address} references ${dep} by name, which does not exist yet and --exclude leaves out; ` +
            `remove that --exclude so that it is created first, or leave ${address} out too`,
        );
      }
      kept.add(dep);
      queue.push(dep);
      warnings.push(`${dep} is pulled into this targeted plan: ${address} references it by name, and it must be created first`);
    }
  }
  return warnings;
}

/**
 * A warning for each target that names none of `addresses` (what the manifests and the stack's objects are): most
 * likely a typo, which would otherwise look like a plan with nothing to do. (Excludes are not checked: what they
 * name is taken out before the plan sees it.)
 */
export function unmatchedTargets(scope: Scope, addresses: readonly string[]): string[] {
  return scope.targets
    .filter((t) => !addresses.some((a) => addressMatches(t, a)))
    .map((t) => {
      const near = closest(t, addresses);
      const fix = near === undefined ? "check the address (a plan without --target shows them)" : `did you mean ${near}?`;
      return `--target ${t}${NAMES_NOTHING}${fix}`;
    });
}

const NAMES_NOTHING = " names nothing in the manifests or among the stack's objects; ";

/** Whether a plan's warning is one of unmatchedTargets'. */
export function isUnmatchedTarget(warning: string): boolean {
  return warning.startsWith("--target ") && warning.includes(NAMES_NOTHING);
}
