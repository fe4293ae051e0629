/**
 * The fixtures file of `edgeplan serve --fixtures FILE` (docs/server.md, "Fixtures"): HTTPS edges with their routes,
 * and non-weighted backends, which the API itself cannot create.
 *
 * ```yaml
 * edges:
 *   - id: edghts_2G4e8ay6UX87bXwr8GXBHKATNk6     # optional
 *     hostports: [app.example.com:443]            # optional
 *     routes:
 *       - {id: edghtsrt_..., match: /, match_type: path_prefix}
 * backends:
 *   - {id: bkdhr_..., type: http_response}       # id optional; types: http_response, tunnel_group, failover, static_address
 *   - {type: static_address, address: "10.0.0.1:443", tls: {enabled: true}, description: db}
 * ```
 *
 * A backend may give `description`, `metadata` and the fields of its type (docs/api.md section 2: `body`,
 * `headers`, `status_code`; `labels`; `backends`; `address`, `tls`); those left out are answered empty.
 *
 * Loading is idempotent, so a restart on the same data file never duplicates anything:
 * - an entry with an `id` is created when no object has that id, and left as it is otherwise;
 * - an entry without an `id` gets a generated id the first time and the store remembers it under the entry's
 *   fixture key: `edges[N]` for the N-th edge, `<edge id> <match_type> <match>` for a route, `backends[N]` for
 *   the N-th backend. Reordering id-less entries therefore maps them to other objects: give ids to pin them.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { ManifestError, type Diagnostic } from "../model/errors.js";
import { decodeManifest, parseOneDocument, Pinner } from "../manifest/yaml-source.js";
import { FIXTURE_BACKEND_TYPES, ID_PREFIX, idPattern, isBackendId, unstorableText, type FixtureBackendType } from "../model/wire.js";
import type { ChildBackendFields, Store, StoreTx } from "./store.js";

const MATCH_TYPES = ["exact_path", "path_prefix"] as const;

/** Text the stores hold exactly: the rule of the API's fields (`unstorableText`), so both stores load a file alike. */
const storableText = z.string().superRefine((s, ctx) => {
  const problem = unstorableText(s);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
});

const FixtureRouteSchema = z.strictObject({
  id: z.string().regex(idPattern(ID_PREFIX.route), `expected ${ID_PREFIX.route}_ followed by 27 base62 characters`).optional(),
  match: storableText.min(1, "must not be empty"),
  match_type: z.enum(MATCH_TYPES),
});

const FixtureEdgeSchema = z.strictObject({
  id: z.string().regex(idPattern(ID_PREFIX.edge), `expected ${ID_PREFIX.edge}_ followed by 27 base62 characters`).optional(),
  hostports: z.array(storableText).optional(),
  routes: z.array(FixtureRouteSchema).default([]),
});

/** The fields a fixture may give a backend of each type (docs/api.md section 2); a tunnel group's tunnels are the server's. */
const FIXTURE_BACKEND_FIELDS = {
  http_response: ["body", "headers", "status_code"],
  tunnel_group: ["labels"],
  failover: ["backends"],
  static_address: ["address", "tls"],
} as const satisfies Record<FixtureBackendType, readonly string[]>;

const FixtureBackendSchema = z
  .strictObject({
    id: z.string().optional(),
    type: z.enum(Object.keys(FIXTURE_BACKEND_TYPES) as [FixtureBackendType, ...FixtureBackendType[]]),
    description: storableText.optional(),
    metadata: storableText.optional(),
    body: storableText.optional(),
    headers: z.record(storableText, storableText).optional(),
    status_code: z.number().int().min(100).max(599).optional(),
    labels: z.record(storableText, storableText).optional(),
    backends: z.array(z.string().refine(isBackendId, "expected a backend id (bkdwd_, bkdhr_, bkdtg_, bkdfo_ or bkdsc_ followed by 27 base62 characters)")).optional(),
    address: storableText.optional(),
    tls: z.strictObject({ enabled: z.boolean() }).optional(),
  })
  .superRefine((b, ctx) => {
    const prefix = FIXTURE_BACKEND_TYPES[b.type];
    if (b.id !== undefined && !idPattern(prefix).test(b.id)) {
      ctx.addIssue({ code: "custom", path: ["id"], message: `a ${b.type} backend id is ${prefix}_ followed by 27 base62 characters` });
    }
    const own: readonly string[] = FIXTURE_BACKEND_FIELDS[b.type];
    for (const field of Object.values(FIXTURE_BACKEND_FIELDS).flat()) {
      if (b[field] !== undefined && !own.includes(field)) {
        ctx.addIssue({
          code: "custom",
          path: [field],
          message: `a ${b.type} backend has no field ${field}; its fields are description, metadata${own.map((f) => `, ${f}`).join("")}`,
        });
      }
    }
  });

export const FixturesSchema = z.strictObject({
  edges: z.array(FixtureEdgeSchema).default([]),
  backends: z.array(FixtureBackendSchema).default([]),
});

/** The parsed fixtures file. */
export type Fixtures = z.output<typeof FixturesSchema>;
/** What a caller may pass (optional lists may be left out). */
export type FixturesInput = z.input<typeof FixturesSchema>;

function formatPath(path: PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`)).join("");
}

/** Duplicate ids and duplicate id-less routes, which would make loading ambiguous. */
function crossChecks(f: Fixtures): { path: PropertyKey[]; message: string }[] {
  const problems: { path: PropertyKey[]; message: string }[] = [];
  const seen = new Map<string, string>();
  const see = (id: string | undefined, path: PropertyKey[]): void => {
    if (id === undefined) return;
    const first = seen.get(id);
    if (first) problems.push({ path: [...path, "id"], message: `id ${id} is used twice (first at ${first}); ids are unique` });
    else seen.set(id, formatPath(path));
  };
  f.edges.forEach((edge, e) => {
    see(edge.id, ["edges", e]);
    const matches = new Set<string>();
    edge.routes.forEach((route, r) => {
      see(route.id, ["edges", e, "routes", r]);
      if (route.id === undefined) {
        const key = `${route.match_type} ${route.match}`;
        if (matches.has(key)) {
          problems.push({
            path: ["edges", e, "routes", r],
            message: `a second route without id has match_type ${route.match_type} and match ${route.match}; give one of them an id`,
          });
        }
        matches.add(key);
      }
    });
  });
  for (const [i, b] of f.backends.entries()) see(b.id, ["backends", i]);
  return problems;
}

/**
 * Checks a fixtures value (parsed YAML or an object from code). Throws a ManifestError with every problem as
 * `file:line:col: message` (positions when `pin` places the file's nodes; else line 1).
 */
export function validateFixtures(value: unknown, file = "fixtures", pin?: Pinner): Fixtures {
  const parsed = FixturesSchema.safeParse(value ?? {});
  const diagnostics: Diagnostic[] = [];
  const report = (path: PropertyKey[], message: string): void => {
    const where = formatPath(path);
    diagnostics.push({ severity: "error", pos: pin?.value(path) ?? { file, line: 1, col: 1 }, message: where ? `${where}: ${message}` : message });
  };
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const top = issue.code === "unrecognized_keys" && issue.path.length === 0;
      report(issue.path, top ? `${issue.message}; a fixtures file holds only edges and backends (see examples/fixtures.yaml)` : issue.message);
    }
  } else {
    for (const p of crossChecks(parsed.data)) report(p.path, p.message);
  }
  if (diagnostics.length > 0 || !parsed.success) throw new ManifestError(diagnostics);
  return parsed.data;
}

/**
 * A manifest given where a fixtures file is expected (`--fixtures routes.yaml`): its first top-level `kind:`, as a
 * diagnostic that says what each file is for. Checked on the text, before parsing, as a manifest file often holds
 * several documents, which a fixtures file never does.
 */
function manifestKind(text: string, file: string): Diagnostic | undefined {
  const found = /^kind[ \t]*:[ \t]*([A-Za-z]+)/m.exec(text);
  if (!found) return undefined;
  const line = text.slice(0, found.index).split("\n").length;
  return {
    severity: "error",
    pos: { file, line, col: 1 },
    message:
      `this is a manifest (kind: ${found[1]}), not a fixtures file: manifests go to plan and apply. A fixtures file holds ` +
      "what the API cannot create, the edges with their routes and the backends: `edges: [{id, hostports, routes: [{id, match, " +
      "match_type}]}]` and `backends: [{id, type}]` (see examples/fixtures.yaml)",
  };
}

/**
 * Reads and checks a fixtures YAML file with the manifests' reader (the same limits of size, nesting and aliases).
 * Throws a ManifestError pointing at each problem's line.
 */
export function loadFixturesFile(path: string): Fixtures {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new ManifestError([{ severity: "error", pos: { file: path, line: 1, col: 1 }, message: `cannot read the fixtures file: ${(err as Error).message}` }]);
  }
  const decoded = decodeManifest(bytes, path);
  if ("diagnostic" in decoded) throw new ManifestError([decoded.diagnostic]);
  const manifest = manifestKind(decoded.text, path);
  if (manifest) throw new ManifestError([manifest]);
  const read = parseOneDocument(decoded.text, path, "a fixtures file holds one document; remove this one");
  if ("errors" in read) throw new ManifestError(read.errors);
  return read.doc === null ? validateFixtures({}, path) : validateFixtures(read.value, path, new Pinner(read.doc));
}

/** What loading fixtures did. */
export interface FixturesSummary {
  edges: number;
  routes: number;
  backends: number;
  /** How many of them were created now (the rest already existed). */
  created: number;
}

/**
 * Loads fixtures into `account` in one transaction under the store's start-up lock, idempotently (see the file
 * comment): what already exists is found again, by id or by fixture key, and left as it is. Of several replicas
 * starting together, the first creates the objects and the others find them.
 */
export function applyFixtures(store: Store, account: string, fixtures: Fixtures): Promise<FixturesSummary> {
  return store.transaction(
    async (tx) => {
      const summary: FixturesSummary = { edges: 0, routes: 0, backends: 0, created: 0 };
      for (const [e, edge] of fixtures.edges.entries()) await loadEdge(tx, account, edge, e, summary);
      for (const [i, b] of fixtures.backends.entries()) await loadBackend(tx, account, b, i, summary);
      return summary;
    },
    { startup: true },
  );
}

type FixtureEdge = Fixtures["edges"][number];

async function loadEdge(tx: StoreTx, account: string, edge: FixtureEdge, e: number, summary: FixturesSummary): Promise<void> {
  const init = edge.hostports ? { hostports: edge.hostports } : undefined;
  let edgeId = edge.id;
  if (edgeId === undefined) {
    const key = `edges[${e}]`;
    const known = await tx.fixtureId(account, key);
    if (known && (await tx.getEdge(account, known))) edgeId = known;
    else {
      edgeId = (await tx.ensureEdge(account, undefined, init)).id;
      await tx.setFixtureId(account, key, edgeId);
      summary.created++;
    }
  } else if (!(await tx.getEdge(account, edgeId))) {
    await tx.ensureEdge(account, edgeId, init);
    summary.created++;
  }
  summary.edges++;
  for (const route of edge.routes) {
    const routeInit = { match: route.match, match_type: route.match_type };
    if (route.id === undefined) {
      const key = `${edgeId} ${route.match_type} ${route.match}`;
      const known = await tx.fixtureId(account, key);
      if (!known || !(await tx.getRoute(account, edgeId, known))) {
        await tx.setFixtureId(account, key, (await tx.ensureRoute(account, edgeId, undefined, routeInit)).id);
        summary.created++;
      }
    } else if (!(await tx.getRoute(account, edgeId, route.id))) {
      await tx.ensureRoute(account, edgeId, route.id, routeInit);
      summary.created++;
    }
    summary.routes++;
  }
}

type FixtureBackend = Fixtures["backends"][number];

/** The fields an entry gives its backend, those it leaves out omitted (they are answered empty). */
function fixtureFields(b: FixtureBackend): ChildBackendFields {
  const { id: _id, type: _type, ...fields } = b;
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

async function loadBackend(tx: StoreTx, account: string, b: FixtureBackend, i: number, summary: FixturesSummary): Promise<void> {
  if (b.id === undefined) {
    const key = `backends[${i}]`;
    const known = await tx.fixtureId(account, key);
    const existing = known ? await tx.getFixtureBackend(account, known) : undefined;
    if (!existing || existing.type !== b.type) {
      await tx.setFixtureId(account, key, (await tx.createBackend(account, b.type, fixtureFields(b))).id);
      summary.created++;
    }
  } else if (!(await tx.getFixtureBackend(account, b.id))) {
    await tx.ensureBackend(account, b.id, fixtureFields(b));
    summary.created++;
  }
  summary.backends++;
}

/** What a preview against the embedded server needs to exist: the routes it names and the child backends it uses. */
export interface ProvisionNeeds {
  routes: ReadonlyArray<{ edge: string; route: string }>;
  /** Ids of fixture backends (`bkdhr_`, `bkdtg_`, `bkdfo_`, `bkdsc_`). */
  backends: readonly string[];
}

/**
 * Creates, in the server's account and in one transaction, the edges, routes and fixture backends of `needs` that
 * the store lacks (`edgeplan plan --local` without `--fixtures`). Returns what it made, in order, as `edge ID`,
 * `route ID` and `backend ID`; nothing when everything existed. Throws an EdgeplanError for an id that is not one of
 * its kind, or a route that belongs to another edge.
 */
export function provisionServer(server: { store: Store; account: string }, needs: ProvisionNeeds): Promise<string[]> {
  const { store, account } = server;
  return store.transaction(async (tx) => {
    const made: string[] = [];
    for (const r of needs.routes) {
      if (!(await tx.getEdge(account, r.edge))) made.push(`edge ${r.edge}`);
      if (!(await tx.getRoute(account, r.edge, r.route))) made.push(`route ${r.route}`);
      await tx.ensureRoute(account, r.edge, r.route);
    }
    for (const id of [...new Set(needs.backends)].sort()) {
      if (!(await tx.getFixtureBackend(account, id))) made.push(`backend ${id}`);
      await tx.ensureBackend(account, id);
    }
    return made;
  });
}
