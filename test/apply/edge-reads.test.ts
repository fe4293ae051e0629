/**
 * The edge reads of an apply, end to end: the routes of the modules it declares and of the modules its inventory
 * records (orphans) come from one read of the edge list's first page, however many edges each set spans.
 */
import { afterAll, describe, expect, it } from "vitest";
import { fakeId } from "../helpers/server.js";
import { closeWorlds, FIXTURES, startWorld } from "./e2e.js";

afterAll(closeWorlds);

const EDGES = [1, 2, 3, 4].map((n) => ({ id: fakeId("edghts", 8100 + n), route: fakeId("edghtsrt", 8100 + n) }));
const cbRoute = (edge: string, route: string): string =>
  `kind: EdgeRoute\nedge: ${edge}\nroute: ${route}\ncircuit_breaker:\n  tripped_duration: 60\n  rolling_window: 120\n  num_buckets: 10\n  volume_threshold: 20\n  error_threshold_percentage: 0.5\n`;
const manifestsOf = (edges: typeof EDGES): Record<string, string> => Object.fromEntries(edges.map((e) => [`${e.id}.yaml`, cbRoute(e.id, e.route)]));

describe("apply reads the edges of declared and recorded modules", () => {
  it("reads the first page of the edge list once, and no edge by id, when both sets span several edges", async () => {
    const fixtures = { ...FIXTURES, edges: EDGES.map((e) => ({ id: e.id, routes: [{ id: e.route, match: "/", match_type: "path_prefix" as const }] })) };
    const w = await startWorld({ fixtures });
    w.manifests(manifestsOf(EDGES));
    const first = await w.cli(["apply", "m", "--auto-approve"]);
    expect(first.code, first.stderr).toBe(0);

    // The modules of edges 3 and 4 leave the manifests: their inventory entries are orphans, read to be shown.
    w.manifests(manifestsOf(EDGES.slice(0, 2)));
    const from = w.log().length;
    const second = await w.cli(["apply", "m", "--auto-approve"]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain("2 orphans");
    const edgeReads = w.log(from).filter((l) => l.method === "GET" && l.path.startsWith("/edges/"));
    expect(edgeReads.map((l) => l.path)).toEqual(["/edges/https"]);
  });
});
