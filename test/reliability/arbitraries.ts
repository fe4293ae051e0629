/**
 * fast-check generators of small random worlds: desired states (weighted backends with references, metadata,
 * protection, adoption by id; routes with SAML and circuit-breaker intents) and live states (objects of this stack,
 * of another stack, with no marker or with metadata that is not JSON; modules set or not), plus the fault plans and
 * their seeds. Shared by the pure property tests and those against the real server.
 */
import fc from "fast-check";
import type { DesiredEdgeRoute, DesiredState, DesiredWeightedBackend, ModuleIntent } from "../../src/model/state.js";
import { NAMEID_FORMATS, type CircuitBreakerSettings, type SamlSettings, type WeightedBackend } from "../../src/model/wire.js";

export const STACK = "default";
export const NAMES = ["api", "web", "canary", "stable", "blue"];
export const FIXTURES = [1, 2, 3].map((n) => `bkdhr_${String(n).padStart(27, "0")}`);
export const EDGES = ["edghts_000000000000000000000000001", "edghts_000000000000000000000000002"];
/** Two routes on the first edge, one on the second. */
export const ROUTES: Array<{ edge: string; route: string }> = [
  { edge: EDGES[0] as string, route: "edghtsrt_000000000000000000000000001" },
  { edge: EDGES[0] as string, route: "edghtsrt_000000000000000000000000002" },
  { edge: EDGES[1] as string, route: "edghtsrt_000000000000000000000000003" },
];

export const IDP_XML = [
  (id: string) =>
    `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://${id}.example.com">` +
    `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
    `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://${id}.example.com/sso"/>` +
    `</md:IDPSSODescriptor></md:EntityDescriptor>\n`,
].flatMap((f) => [f("okta"), f("entra")]);

const pos = (line: number) => ({ file: "manifests/world.yaml", line, col: 1 });
export const wbId = (n: number): string => `bkdwd_${String(n).padStart(27, "0")}`;

const metadataArb = fc.constantFrom<Record<string, unknown>>({}, { team: "payments" }, { team: "payments", tags: ["a", "b"] }, { z: { b: 1, a: [1, 2] }, a: null });
const descriptionArb = fc.constantFrom("", "Checkout", 'ünïcödé 🚀 "quoted"');
const weightArb = fc.oneof(fc.constantFrom(0, 1, 10_000), fc.integer({ min: 0, max: 10_000 }));

export const samlSettingsArb: fc.Arbitrary<SamlSettings> = fc.record({
  enabled: fc.boolean(),
  options_passthrough: fc.boolean(),
  cookie_prefix: fc.constantFrom("", "sess."),
  inactivity_timeout: fc.constantFrom(0, 300, 4_294_967_295),
  maximum_duration: fc.constantFrom(0, 3600),
  idp_metadata: fc.constantFrom(...IDP_XML),
  force_authn: fc.boolean(),
  allow_idp_initiated: fc.boolean(),
  authorized_groups: fc.subarray(["engineering", "ops", "finance"]),
  nameid_format: fc.constantFrom(...NAMEID_FORMATS),
});

export const cbSettingsArb: fc.Arbitrary<CircuitBreakerSettings> = fc.record({
  enabled: fc.boolean(),
  tripped_duration: fc.integer({ min: 1, max: 600 }),
  rolling_window: fc.integer({ min: 1, max: 600 }),
  num_buckets: fc.integer({ min: 1, max: 128 }),
  volume_threshold: fc.integer({ min: 0, max: 100 }),
  error_threshold_percentage: fc.constantFrom(0, 0.2, 0.5, 1),
});

function intentArb<T>(settings: fc.Arbitrary<T>): fc.Arbitrary<ModuleIntent<T>> {
  return fc.oneof(
    fc.constant<ModuleIntent<T>>({ state: "unmanaged" }),
    fc.constant<ModuleIntent<T>>({ state: "absent", source: pos(200) }),
    settings.map((s): ModuleIntent<T> => ({ state: "present", settings: s, source: pos(210) })),
  );
}

/** A live weighted backend as the API returns it. */
function liveWb(id: string, description: string, metadata: string, backends: Record<string, number>): WeightedBackend {
  return { id, uri: `http://sim.invalid/backends/weighted/${id}`, created_at: "2025-01-01T00:00:00Z", description, metadata, backends };
}

export interface LiveSpec {
  backends: WeightedBackend[];
  routes: Array<{ edge: string; route: string; saml: SamlSettings | null; circuit_breaker: CircuitBreakerSettings | null }>;
}

/** Live objects: unique markers per stack, children among fixtures and older objects (the API refuses cycles). */
export const liveArb: fc.Arbitrary<LiveSpec> = fc
  .record({
    wbs: fc.array(
      fc.record({
        owner: fc.constantFrom("mine", "mine", "other", "none", "junk"),
        name: fc.constantFrom(...NAMES, "old-a", "old-b"),
        protect: fc.boolean(),
        description: descriptionArb,
        metadata: metadataArb,
        fixtures: fc.subarray(FIXTURES),
        older: fc.array(fc.nat(), { maxLength: 2 }),
        weight: weightArb,
      }),
      { maxLength: 6 },
    ),
    routes: fc.tuple(...ROUTES.map(() => fc.record({ saml: fc.option(samlSettingsArb, { freq: 2 }), cb: fc.option(cbSettingsArb, { freq: 2 }) }))),
  })
  .map(({ wbs: all, routes }) => {
    // One object per owner marker: two objects with one marker are a state edgeplan warns about, not one it makes.
    const seen = new Set<string>();
    const wbs = all.filter((s) => {
      if (s.owner === "none" || s.owner === "junk") return true;
      const key = `${s.owner}/${s.name}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    return {
      backends: wbs.map((s, i) => {
        const older = [...new Set(s.older.filter(() => i > 0).map((n) => wbId((n % i) + 1)))];
        const children = Object.fromEntries([...s.fixtures, ...older].map((c) => [c, s.weight]));
        const marker = s.protect
          ? { stack: s.owner === "mine" ? STACK : "other", name: s.name, protect: true }
          : { stack: s.owner === "mine" ? STACK : "other", name: s.name };
        const metadata =
          s.owner === "none"
            ? Object.keys(s.metadata).length === 0
              ? ""
              : JSON.stringify(s.metadata)
            : s.owner === "junk"
              ? "owner=bob; not json"
              : JSON.stringify({ ...s.metadata, edgeplan: marker });
        return liveWb(wbId(i + 1), s.description, metadata, children);
      }),
      routes: ROUTES.map((r, i) => ({ ...r, saml: routes[i]?.saml ?? null, circuit_breaker: routes[i]?.cb ?? null })),
    };
  });

/** Desired objects; `adopt` indexes pick live objects without a marker to adopt by `id:`. */
export function desiredArb(live: LiveSpec): fc.Arbitrary<DesiredState> {
  const unmarked = live.backends.filter((b) => !b.metadata.includes('"edgeplan"')).map((b) => b.id);
  return fc
    .record({
      names: fc.uniqueArray(fc.constantFrom(...NAMES), { maxLength: NAMES.length }),
      specs: fc.array(
        fc.record({
          description: descriptionArb,
          metadata: metadataArb,
          fixtures: fc.subarray(FIXTURES),
          refs: fc.subarray(NAMES),
          liveRefs: fc.subarray(
            live.backends.map((b) => b.id),
            { maxLength: Math.min(2, live.backends.length) },
          ),
          weights: fc.array(weightArb, { minLength: 8, maxLength: 8 }),
          protect: fc.constantFrom(false, false, false, true),
          adopt: fc.option(fc.nat(), { freq: 4 }),
        }),
        { minLength: NAMES.length, maxLength: NAMES.length },
      ),
      routes: fc.tuple(...ROUTES.map(() => fc.record({ saml: intentArb(samlSettingsArb), cb: intentArb(cbSettingsArb) }))),
    })
    .map(({ names, specs, routes }) => {
      const adopted = new Set<string>();
      const weightedBackends = names.map((name, i): DesiredWeightedBackend => {
        const s = specs[i] as (typeof specs)[number];
        // References only to names declared after this one: never a cycle (the loader refuses cycles).
        const refs = s.refs.filter((r) => names.indexOf(r) > i);
        // Live objects by id too: owned, foreign or unmarked (a cycle through an id is the plan's error to find).
        const keys = [...s.fixtures, ...refs, ...s.liveRefs];
        const backends = Object.fromEntries(keys.map((k, j) => [k, s.weights[j % s.weights.length] as number]));
        const d: DesiredWeightedBackend = {
          kind: "WeightedBackend",
          name,
          description: s.description,
          metadata: structuredClone(s.metadata),
          backends,
          protect: s.protect,
          source: pos(i * 10 + 1),
        };
        if (s.adopt !== null && unmarked.length > 0) {
          const id = unmarked[s.adopt % unmarked.length] as string;
          if (!adopted.has(id)) {
            adopted.add(id);
            d.id = id;
          }
        }
        return d;
      });
      const edgeRoutes = ROUTES.map(
        (r, i): DesiredEdgeRoute => ({
          kind: "EdgeRoute",
          edge: r.edge,
          route: r.route,
          saml: routes[i]?.saml ?? { state: "unmanaged" },
          circuit_breaker: routes[i]?.cb ?? { state: "unmanaged" },
          source: pos(100 + i * 10),
        }),
      );
      return { weightedBackends, edgeRoutes };
    });
}

/** A world: live, desired against it, and the plan options. */
export const worldArb = liveArb.chain((live) =>
  fc.record({
    live: fc.constant(live),
    desired: desiredArb(live),
    prune: fc.boolean(),
  }),
);
