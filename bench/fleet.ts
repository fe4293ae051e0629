/**
 * A synthetic fleet for the benchmarks: manifest files written to a temporary folder and loaded with the product's
 * own loader, and a live side seeded straight into a server's store (no request, so seeding costs the benchmark no
 * latency and counts no request). The live side is made from the loaded manifests with the product's own marker
 * and metadata functions, so an object meant to be unchanged plans as unchanged, and every planned change is one the
 * fleet made on purpose. `expectedSummary` says which plan the fleet must give; scenarios check it.
 */
import { buildInventoryBody, packInventory } from "../src/model/inventory.js";
import { moduleAddress } from "../src/model/plan.js";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildMarker, buildMetadata } from "../src/kinds/weighted-backend.js";
import { loadDesired } from "../src/manifest/load.js";
import { canonicalJson } from "../src/model/canonical.js";
import type { DesiredState } from "../src/model/state.js";
import type { PlanSummary } from "../src/model/plan.js";
import type { CircuitBreakerSettings, SamlSettings } from "../src/model/wire.js";
import type { StoredSaml } from "../src/server/index.js";
import type { SqliteStore } from "../src/server/sqlite-store.js";
import { makeSigningCertificate } from "../src/server/saml-certificate.js";
import { repoRoot } from "./measure.js";
import { seedDataFile } from "./traffic.js";

/** How many objects of each sort the fleet holds. */
export interface FleetSpec {
  /** Weighted backends in the manifests and live, the same on both sides. */
  same: number;
  /** Weighted backends in the manifests and live, with other weights live (one update each). */
  changed: number;
  /** Weighted backends only in the manifests (one create each); every tenth refers to the one before by name. */
  created: number;
  /** Weighted backends only live, owned by the stack (orphans: one delete each with --prune). */
  orphans: number;
  /** HTTPS edges, and routes per edge; every route has both modules managed. */
  edges: number;
  routesPerEdge: number;
  /** Routes whose two modules differ live (two module replaces each). */
  changedRoutes: number;
}

export interface Fleet {
  /** The folder holding the manifests (`manifests/`) and anything else the scenario writes. */
  dir: string;
  manifests: string;
  desired: DesiredState;
  /** Manifest files written. */
  files: number;
  /** Time loadDesired took, in ms. */
  loadMs: number;
  /** The stack's inventory objects seeded live (seedLive): weighted backends too, so the listing pages count them. */
  inventoryObjects: number;
  expected: PlanSummary;
  /** Removes the folder. */
  remove(): void;
}

export const BENCH_STACK = "bench";
const OBJECTS_PER_FILE = 100;
/** The fixture child backends every fleet shares; the weighted backend at position i names children i and i + 1. */
const FLEET_CHILDREN = 16;
const ROUTES_PER_FILE = 20;

const pad = (n: number): string => String(n).padStart(5, "0");

/** The plan the fleet must give (with --prune). */
export function expectedSummary(spec: FleetSpec): PlanSummary {
  const total = spec.changed + spec.created + spec.orphans + 2 * spec.changedRoutes;
  return {
    create: spec.created,
    update: spec.changed,
    delete: spec.orphans,
    adopt: 0,
    takeover: 0,
    rename: 0,
    rollout: 0,
    module_replace: 2 * spec.changedRoutes,
    module_delete: 0,
    orphans_kept: 0,
    total,
  };
}

/**
 * How many child ids the fleet's creates name that no live weighted backend references before the run: the plan
 * reads each of them once (GET /backends/<kind>/<id>). Live: the unchanged and changed objects (positions 0.. in
 * manifest order, children i and i + 1) and the orphans (child i); the creates follow them.
 */
export function introducedChildren(spec: FleetSpec): number {
  const live = new Set<number>();
  const kept = spec.same + spec.changed;
  for (let i = 0; i < Math.min(kept, FLEET_CHILDREN); i++) live.add(i % FLEET_CHILDREN).add((i + 1) % FLEET_CHILDREN);
  for (let i = 0; i < Math.min(spec.orphans, FLEET_CHILDREN); i++) live.add(i % FLEET_CHILDREN);
  const introduced = new Set<number>();
  for (let k = kept; k < kept + Math.min(spec.created, FLEET_CHILDREN); k++) {
    for (const c of [k % FLEET_CHILDREN, (k + 1) % FLEET_CHILDREN]) if (!live.has(c)) introduced.add(c);
  }
  return introduced.size;
}

/** Ids the fleet needs from the store before its manifests can be written: child backends, edges, routes. */
export interface FleetIds {
  children: string[];
  /** Route ids per edge id. */
  routes: Array<{ edge: string; routes: string[] }>;
}

/** Creates the fixture child backends, edges and routes the fleet's manifests name. */
export function provisionFleet(store: SqliteStore, account: string, spec: FleetSpec): FleetIds {
  return store.syncTransaction(() => {
    const children: string[] = [];
    for (let i = 0; i < FLEET_CHILDREN; i++) children.push(store.createBackend(account, i % 2 === 0 ? "http_response" : "tunnel_group").id);
    const routes: FleetIds["routes"] = [];
    for (let e = 0; e < spec.edges; e++) {
      const edge = store.ensureEdge(account).id;
      const list: string[] = [];
      for (let r = 0; r < spec.routesPerEdge; r++) list.push(store.ensureRoute(account, edge, undefined, { match: `/app-${r}`, match_type: "path_prefix" }).id);
      routes.push({ edge, routes: list });
    }
    return { children, routes };
  });
}

export function weightedBackendDoc(name: string, index: number, children: string[], extra?: { ref: string; weight: number }): string {
  const a = children[index % children.length] as string;
  const b = children[(index + 1) % children.length] as string;
  const lines = [
    "kind: WeightedBackend",
    `name: ${name}`,
    `description: Service ${name}, 90/10 canary`,
    "metadata:",
    `  team: team-${index % 40}`,
    `  tier: "${index % 3}"`,
    "backends:",
    `  ${a}: 9000`,
    `  ${b}: 1000`,
  ];
  if (extra) lines.push(`  ${extra.ref}: ${extra.weight}`);
  return lines.join("\n");
}

function edgeRouteDoc(edge: string, route: string, index: number): string {
  return [
    "kind: EdgeRoute",
    `edge: ${edge}`,
    `route: ${route}`,
    "circuit_breaker:",
    "  tripped_duration: 30",
    "  rolling_window: 60",
    "  num_buckets: 12",
    "  volume_threshold: 20",
    "  error_threshold_percentage: 0.25",
    "saml:",
    "  idp_metadata_file: idp/okta.xml",
    `  authorized_groups: [team-${index % 40}, platform]`,
    "  allow_idp_initiated: false",
  ].join("\n");
}

/** The names of the fleet's weighted backends by sort, in manifest order. */
export function fleetNames(spec: FleetSpec): { same: string[]; changed: string[]; created: string[]; orphans: string[] } {
  const range = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${pad(i)}`);
  return { same: range("same", spec.same), changed: range("changed", spec.changed), created: range("new", spec.created), orphans: range("old", spec.orphans) };
}

/** A new temporary folder for one scenario's files (manifests, data files). */
export function makeWorkDir(): string {
  return mkdtempSync(join(tmpdir(), "edgeplan-bench-"));
}

/**
 * Writes the manifests of the fleet into `dir`/manifests and loads them with `loadDesired`. Throws when the loader
 * reports an error (the fleet would not measure what it claims). `remove()` removes `dir`.
 */
export async function writeFleet(root: string, spec: FleetSpec, ids: FleetIds, dir: string): Promise<Fleet> {
  const manifests = join(dir, "manifests");
  mkdirSync(join(manifests, "idp"), { recursive: true });
  writeFileSync(join(manifests, "idp", "okta.xml"), readFileSync(join(root, "examples", "saml", "idp", "okta.xml")));

  const names = fleetNames(spec);
  const docs: string[] = [];
  let index = 0;
  for (const name of [...names.same, ...names.changed]) docs.push(weightedBackendDoc(name, index++, ids.children));
  names.created.forEach((name, i) => {
    const prev = names.created[i - 1];
    docs.push(weightedBackendDoc(name, index++, ids.children, i % 10 === 9 && prev !== undefined ? { ref: prev, weight: 500 } : undefined));
  });
  let files = 0;
  for (let i = 0; i < docs.length; i += OBJECTS_PER_FILE) {
    writeFileSync(join(manifests, `backends-${pad(files)}.yaml`), `${docs.slice(i, i + OBJECTS_PER_FILE).join("\n---\n")}\n`);
    files++;
  }
  let routeIndex = 0;
  for (const { edge, routes } of ids.routes) {
    const routeDocs = routes.map((route) => edgeRouteDoc(edge, route, routeIndex++));
    for (let i = 0; i < routeDocs.length; i += ROUTES_PER_FILE) {
      writeFileSync(join(manifests, `routes-${pad(files)}.yaml`), `${routeDocs.slice(i, i + ROUTES_PER_FILE).join("\n---\n")}\n`);
      files++;
    }
  }

  const started = performance.now();
  const loaded = await loadDesired([manifests], { cwd: dir, env: {} });
  const loadMs = performance.now() - started;
  const errors = loaded.diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) {
    throw new Error(`the bench fleet's manifests do not load: ${errors.length} errors, first: ${errors[0]?.message ?? ""}`);
  }
  return {
    dir,
    manifests,
    desired: loaded.desired,
    files,
    loadMs,
    inventoryObjects: 0,
    expected: expectedSummary(spec),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Seeds the live side into the store: the unchanged and changed weighted backends (changed ones with an 85/15
 * split instead of 90/10: a 5-point shift, below every risk threshold), the orphans, and both modules of every
 * route (the first `changedRoutes` with another volume threshold and another group). One signing certificate is
 * made for the whole fleet: the server makes one per route, but its cost is not what these benchmarks measure.
 */
export async function seedLive(store: SqliteStore, account: string, spec: FleetSpec, fleet: Fleet, ids: FleetIds): Promise<void> {
  const names = fleetNames(spec);
  const changed = new Set(names.changed);
  const byName = new Map(fleet.desired.weightedBackends.map((d) => [d.name, d]));
  const certificate_pem = await makeSigningCertificate("https://idp.edgeplan.localhost/saml/bench");
  store.syncTransaction(() => {
    for (const name of [...names.same, ...names.changed]) {
      const d = byName.get(name);
      if (!d) throw new Error(`the fleet lost ${name}`);
      let backends = { ...d.backends };
      if (changed.has(name)) {
        // The larger share goes from 90 % to 85 %, the smaller from 10 % to 15 %.
        const [major, minor] = Object.entries(backends).sort((x, y) => y[1] - x[1]);
        backends = { [(major as [string, number])[0]]: 8500, [(minor as [string, number])[0]]: 1500 };
      }
      const { id, created_at } = store.newId("bkdwd");
      store.insertWeightedBackend(account, {
        id,
        created_at,
        description: d.description,
        metadata: canonicalJson(buildMetadata(d.metadata, buildMarker(BENCH_STACK, d.name, d.protect))),
        backends,
      });
    }
    names.orphans.forEach((name, i) => {
      const { id, created_at } = store.newId("bkdwd");
      store.insertWeightedBackend(account, {
        id,
        created_at,
        description: `Retired service ${name}`,
        metadata: canonicalJson(buildMetadata({ team: "retired" }, buildMarker(BENCH_STACK, name, false))),
        backends: { [ids.children[i % ids.children.length] as string]: 100 },
      });
    });
    let n = 0;
    for (const r of fleet.desired.edgeRoutes) {
      if (r.saml.state !== "present" || r.circuit_breaker.state !== "present") throw new Error("every fleet route manages both modules");
      const differs = n++ < spec.changedRoutes;
      const saml: SamlSettings = { ...r.saml.settings, authorized_groups: differs ? ["someone-else"] : [...r.saml.settings.authorized_groups] };
      const cb: CircuitBreakerSettings = { ...r.circuit_breaker.settings, volume_threshold: differs ? 99 : r.circuit_breaker.settings.volume_threshold };
      const stored: StoredSaml = { ...saml, certificate_pem };
      store.setSaml(account, r.route, stored);
      store.setCircuitBreaker(account, r.route, cb);
    }
    // The stack's inventory records both modules of every route, as the applies that set them wrote it.
    const entries = Object.fromEntries(
      fleet.desired.edgeRoutes.flatMap((r) => [moduleAddress(r.edge, r.route, "saml"), moduleAddress(r.edge, r.route, "circuit_breaker")].map((a) => [a, {}])),
    );
    for (const write of packInventory(BENCH_STACK, [], entries)) {
      const { id, created_at } = store.newId("bkdwd");
      store.insertWeightedBackend(account, { id, created_at, ...buildInventoryBody(BENCH_STACK, write.after ?? {}) });
      fleet.inventoryObjects++;
    }
  });
}

/** Seeds `dataFile` with the fleet's live state and writes its manifests into `dir`; returns the fleet. */
export function seedFleet(dataFile: string, spec: FleetSpec, dir: string): Promise<Fleet> {
  return seedDataFile(dataFile, async (store, account) => {
    const ids = provisionFleet(store, account, spec);
    const made = await writeFleet(repoRoot(), spec, ids, dir);
    await seedLive(store, account, spec, made, ids);
    return made;
  });
}
