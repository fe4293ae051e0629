/**
 * The small world the fault and crash tests apply: a tree of weighted backends referencing each other by name (so
 * creates and deletes must run in order), a SAML module and a circuit breaker; variants of it that update, rename
 * and prune; and a direct reader of a server's SQLite data file that counts objects per owner marker.
 */
import { isInventoryObject } from "../../src/model/inventory.js";
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { accountForKey } from "../../src/server/index.js";
import { REPO_ROOT } from "../helpers/server.js";

export const EDGE = "edghts_000000000000000000000000001";
export const ROUTE = "edghtsrt_000000000000000000000000001";
/**
 * One route per stack of the crash test (two concurrent sequences, then the SIGINT test), so that two stacks never
 * manage the same modules: a module one stack's inventory records is refused to another (docs/ownership.md).
 */
export const ROUTES = [ROUTE, "edghtsrt_000000000000000000000000002", "edghtsrt_000000000000000000000000003"] as const;
export const CHILDREN = [1, 2, 3, 4].map((n) => `bkdhr_${String(n).padStart(27, "0")}`);

export const FIXTURES_YAML = `edges:
  - id: ${EDGE}
    routes:
${ROUTES.map((id, i) => `      - {id: ${id}, match: /${i === 0 ? "" : `r${i}`}, match_type: path_prefix}`).join("\n")}
backends:
${CHILDREN.map((id) => `  - {id: ${id}, type: http_response}`).join("\n")}
`;

/** Names each variant declares. */
export const VARIANT_NAMES: ReadonlyArray<readonly string[]> = [
  ["root", "mid-a", "mid-b", "leaf-0", "leaf-1", "leaf-2", "leaf-3"],
  ["root", "mid-a", "mid-b", "leaf-0", "leaf-1", "leaf-2", "leaf-3", "leaf-4"],
  ["root", "mid-a", "leaf-0", "leaf-1"],
];

/**
 * Writes variant `v` of the world into `dir/manifests` (replacing what was there):
 * 0: seven objects, SAML and a circuit breaker; 1: every weight changed and one more leaf under mid-b, the circuit
 * breaker retuned; 2: mid-b and its leaves gone (deleted with --prune, children before parents), SAML removed.
 */
export function writeWorld(dir: string, v: number, route: string = ROUTE): void {
  const m = join(dir, "manifests");
  rmSync(m, { recursive: true, force: true });
  mkdirSync(join(m, "idp"), { recursive: true });
  copyFileSync(join(REPO_ROOT, "examples", "saml", "idp", "okta.xml"), join(m, "idp", "okta.xml"));
  const w = (n: number): number => (v === 1 ? n * 7 : n);
  const wb = (name: string, backends: Record<string, number>): string =>
    `kind: WeightedBackend\nname: ${name}\ndescription: ${name} of the fault world\nmetadata: {suite: reliability}\nbackends:\n${Object.entries(backends)
      .map(([k, n]) => `  ${k}: ${n}`)
      .join("\n")}\n`;
  const docs: string[] = [];
  const names = VARIANT_NAMES[v] as readonly string[];
  const leaves = names.filter((n) => n.startsWith("leaf-"));
  for (const [i, leaf] of leaves.entries()) docs.push(wb(leaf, { [CHILDREN[i % CHILDREN.length] as string]: w(10 + i) }));
  docs.push(wb("mid-a", Object.fromEntries(leaves.filter((l) => Number(l.slice(5)) <= 1).map((l, i) => [l, w(20 + i)]))));
  if (names.includes("mid-b")) docs.push(wb("mid-b", Object.fromEntries(leaves.filter((l) => Number(l.slice(5)) >= 2).map((l, i) => [l, w(30 + i)]))));
  docs.push(wb("root", Object.fromEntries([["mid-a", w(50)], ...(names.includes("mid-b") ? [["mid-b", w(50)]] : []), [CHILDREN[3] as string, w(1)]])));
  writeFileSync(join(m, "backends.yaml"), docs.join("---\n"));
  const saml = v === 2 ? "saml: absent\n" : "saml:\n  idp_metadata_file: idp/okta.xml\n  allow_idp_initiated: false\n  authorized_groups: [engineering]\n";
  writeFileSync(
    join(m, "route.yaml"),
    `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${route}\n${saml}circuit_breaker:\n  tripped_duration: ${v === 1 ? 90 : 60}\n  rolling_window: 60\n  num_buckets: 10\n  error_threshold_percentage: 0.5\n`,
  );
}

/** Counts the weighted backends of `apiKey`'s account in a server's data file, per `stack/name` owner marker. */
export function markersInStore(dataFile: string, apiKey: string): { byMarker: Map<string, string[]>; total: number } {
  const db = new Database(dataFile, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT id, metadata FROM weighted_backends WHERE account = ?").all(accountForKey(apiKey)) as Array<{ id: string; metadata: string }>;
    const byMarker = new Map<string, string[]>();
    // Inventory objects (docs/ownership.md) record the stack's route modules, not manifest objects: neither kept
    // nor counted here.
    const objects = rows.filter((r) => !isInventoryObject(r));
    for (const r of objects) {
      let marker: { stack?: string; name?: string; lease?: unknown } | undefined;
      try {
        marker = (JSON.parse(r.metadata) as { edgeplan?: { stack?: string; name?: string; lease?: unknown } }).edgeplan;
      } catch {
        marker = undefined;
      }
      // A running apply's lease (docs/reliability.md, section 6) marks no manifest object; `total` still counts it.
      if (marker?.lease !== undefined) continue;
      const key = marker ? `${marker.stack}/${marker.name}` : `(no marker)`;
      byMarker.set(key, [...(byMarker.get(key) ?? []), r.id]);
    }
    return { byMarker, total: objects.length };
  } finally {
    db.close();
  }
}

/** Ids of the weighted backends an apply reported as created (`weighted_backend.x: created bkdwd_...`). */
export function reportedCreates(output: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of output.matchAll(/weighted_backend\.([a-z0-9-]+): created (bkdwd_[0-9A-Za-z]{27})/g)) out.set(m[1] as string, m[2] as string);
  return out;
}
