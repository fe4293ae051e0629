/**
 * The routes of a plan: each manifest's route paired with the route as read (every route the manifests name must
 * have been read), and the module changes of each pair (`planRoutes`). Pure.
 */
import { compareText } from "../model/canonical.js";
import { InternalError } from "../model/errors.js";
import type { Change } from "../model/plan.js";
import { formatPos, moduleFingerprint, type DesiredEdgeRoute, type LiveRoute } from "../model/state.js";
import { CIRCUIT_BREAKER } from "../kinds/circuit-breaker.js";
import { buildModuleChange } from "../kinds/module.js";
import { SAML } from "../kinds/saml.js";
import { IgnoredCollector, ignoreModuleFields } from "./ignore.js";
import { comparePos, PlanProblems } from "./plan-index.js";

export interface RoutePair {
  desired: DesiredEdgeRoute;
  live: LiveRoute;
}

const routeKey = (r: { edge: string; route: string }): string => `${r.edge}/${r.route}`;

/**
 * Pairs every manifest's route with the live route; reports managed routes not read. Each route is declared once:
 * the loader reports a repeat (src/manifest/build-desired.ts).
 */
export function pairRoutes(desired: readonly DesiredEdgeRoute[], live: readonly LiveRoute[], problems: PlanProblems): RoutePair[] {
  const liveRoutes = new Map(live.map((r) => [routeKey(r), r]));
  const sorted = [...desired].sort((a, b) => compareText(routeKey(a), routeKey(b)) || comparePos(a.source, b.source));
  const pairs: RoutePair[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const r = sorted[i] as DesiredEdgeRoute;
    const prev = sorted[i - 1];
    if (prev && prev.edge === r.edge && prev.route === r.route) {
      throw new InternalError(
        `plan: edge route ${r.edge}/${r.route} is declared at ${formatPos(prev.source)} and ${formatPos(r.source)}; the loader reports a route declared twice`,
      );
    }
    const lr = liveRoutes.get(routeKey(r));
    if (!lr) {
      if (r.saml.state !== "unmanaged" || r.circuit_breaker.state !== "unmanaged") {
        problems.error(r.source, `edge route ${r.edge}/${r.route} does not exist in this account; check the edge and route ids`);
      }
      continue;
    }
    pairs.push({ desired: r, live: lr });
  }
  return pairs;
}

/** The module changes of one pair (SAML before circuit breaker); the fields `ignore_changes` leaves alone go to `ignored`. */
function buildPairChanges({ desired: r, live: lr }: RoutePair, ignored: IgnoredCollector): Change[] {
  const changes: Change[] = [];
  for (const spec of [SAML, CIRCUIT_BREAKER]) {
    const { intent, ignored: paths } = ignoreModuleFields(spec, r, lr, ignored);
    const change = buildModuleChange(spec, r.edge, r.route, intent, lr[spec.kind], () => moduleFingerprint(lr, spec.kind));
    if (!change) continue;
    if (spec.kind === "saml" && r.saml.state === "present" && r.saml.idpMetadataFile) change.notes.push(`IdP metadata from ${r.saml.idpMetadataFile}`);
    ignored.noteOn(change, paths);
    changes.push(change);
  }
  return changes;
}

/**
 * The routes' part of a plan: the manifests' routes paired with the routes as read, the problems of the pairing,
 * the module changes and the fields `ignore_changes` left alone. It needs no weighted backend, so `plan` builds it
 * as soon as the routes are read, while the weighted backends are still being listed. For one plan only: the plan
 * fills in its changes.
 */
export interface RoutePlan {
  pairs: RoutePair[];
  changes: Change[];
  problems: PlanProblems;
  ignored: IgnoredCollector;
}

/** The routes' part of a plan. */
export function planRoutes(desired: readonly DesiredEdgeRoute[], live: readonly LiveRoute[]): RoutePlan {
  const problems = new PlanProblems();
  const ignored = new IgnoredCollector();
  const pairs = pairRoutes(desired, live, problems);
  const changes = pairs.flatMap((pair) => buildPairChanges(pair, ignored));
  return { pairs, changes, problems, ignored };
}

/** Modules the manifests manage that exist live (they count toward the stack's objects). */
export function managedModuleCount(pairs: readonly RoutePair[]): number {
  let n = 0;
  for (const { desired: r, live: lr } of pairs) {
    if (r.saml.state !== "unmanaged" && lr.saml) n++;
    if (r.circuit_breaker.state !== "unmanaged" && lr.circuit_breaker) n++;
  }
  return n;
}
