/**
 * Ownership of route modules under races (docs/ownership.md, "Claims under races"): `runApply` of two stacks at once
 * in this process, against the real server on loopback. Two stacks claiming one unowned module: exactly one owns
 * it, the other writes nothing to it and names the owner. `--takeover` racing the owner's apply that records a new
 * module: no entry is lost. An apply that claims nothing takes no claim lease; a killed apply's claim lease expires.
 */
import { afterAll, describe, expect, it } from "vitest";
import { buildLeaseBody, CLAIM_LEASE_KEY } from "../../src/apply/lease-record.js";
import { runApply, type ApplyCommandOptions } from "../../src/commands/apply.js";
import { runStateRelease } from "../../src/commands/state.js";
import type { CommandIO } from "../../src/commands/io.js";
import { buildInventoryBody } from "../../src/model/inventory.js";
import { fakeId } from "../helpers/server.js";
import { closeWorlds, EDGE, FIXTURES, startWorld, type World } from "./e2e.js";

afterAll(closeWorlds);

const ROUNDS = 20;
const BATCH = 5;
/** Two routes a round, so that no round sees another's modules. */
const ROUTES = Array.from({ length: 2 * ROUNDS }, (_, i) => fakeId("edghtsrt", 9000 + i));
const fixtures = { ...FIXTURES, edges: [{ id: EDGE, routes: ROUTES.map((id, i) => ({ id, match: `/r${i}`, match_type: "path_prefix" as const })) }] };

const cbAddress = (route: string): string => `edge_route.${EDGE}/${route}.circuit_breaker`;
const cbPath = (route: string): string => `/edges/https/${EDGE}/routes/${route}/circuit_breaker`;
const cbBody = (volume: number) => ({ tripped_duration: 60, rolling_window: 120, num_buckets: 10, volume_threshold: volume, error_threshold_percentage: 0.5 });
const cbYaml = (route: string, volume: number): string =>
  `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${route}\ncircuit_breaker:\n  tripped_duration: 60\n  rolling_window: 120\n  num_buckets: 10\n  volume_threshold: ${volume}\n  error_threshold_percentage: 0.5\n`;

function quietIo(w: World): CommandIO & { err: string } {
  const rec = {
    err: "",
    stdout() {},
    stderr(text: string) {
      rec.err += text;
    },
    env: { EDGEPLAN_API_URL: w.server.url, EDGEPLAN_API_KEY: w.server.apiKey },
    cwd: w.dir,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
  return rec;
}

/** Runs one apply in this process: its exit code, or its error's message when it threw (exit 1). */
async function apply(w: World, stack: string, dir: string, extra: Partial<ApplyCommandOptions> = {}): Promise<{ code: number; message: string; stderr: string }> {
  const io = quietIo(w);
  const options: ApplyCommandOptions = { paths: [`m/${dir}`], stack, autoApprove: true, quiet: true, rateLimit: "off", ...extra };
  try {
    const result = await runApply(options, io);
    return { code: result.exitCode, message: "", stderr: io.err };
  } catch (err) {
    return { code: 1, message: (err as Error).message, stderr: io.err };
  }
}

/** Every inventory object of the account: `address -> the stacks whose inventories record it`, and the objects' ids by stack. */
async function inventories(w: World): Promise<{ recordedBy: Map<string, string[]>; ids: Map<string, string[]> }> {
  const recordedBy = new Map<string, string[]>();
  const ids = new Map<string, string[]>();
  for (const wb of await w.list()) {
    const marker = (JSON.parse(wb.metadata || "{}") as { edgeplan?: { stack: string; inventory?: { modules: Record<string, unknown> } } }).edgeplan;
    if (!marker?.inventory) continue;
    ids.set(marker.stack, [...(ids.get(marker.stack) ?? []), wb.id]);
    for (const address of Object.keys(marker.inventory.modules)) recordedBy.set(address, [...(recordedBy.get(address) ?? []), marker.stack]);
  }
  return { recordedBy, ids };
}

/** Runs the rounds, BATCH at once (every apply of a batch races every other one for the claim lease). */
async function inBatches<T>(round: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ROUNDS; i += BATCH) out.push(...(await Promise.all(Array.from({ length: Math.min(BATCH, ROUNDS - i) }, (_, k) => round(i + k)))));
  return out;
}

async function volume(w: World, route: string): Promise<number | null> {
  const res = await w.raw.get(cbPath(route));
  return res.status === 404 ? null : (res.json as { volume_threshold: number }).volume_threshold;
}

describe("route module ownership holds across the stacks of the account", () => {
  it(`two stacks claiming the same unowned module at once: exactly one owns it, the other writes nothing to it and names the owner (${ROUNDS} rounds)`, async () => {
    const w = await startWorld({ fixtures });
    const files: Record<string, string> = {};
    for (let i = 0; i < ROUNDS; i++) {
      files[`a${i}/route.yaml`] = cbYaml(ROUTES[i] as string, 10);
      files[`b${i}/route.yaml`] = cbYaml(ROUTES[i] as string, 20);
    }
    w.manifests(files);
    const from = w.log().length;
    const rounds = await inBatches(async (i) => ({ i, runs: await Promise.all([apply(w, `a${i}`, `a${i}`), apply(w, `b${i}`, `b${i}`)]) }));
    const { recordedBy, ids } = await inventories(w);
    for (const {
      i,
      runs: [a, b],
    } of rounds) {
      const route = ROUTES[i] as string;
      const address = cbAddress(route);
      const [won, lost, winner, loser] = a.code === 0 ? [a, b, `a${i}`, `b${i}`] : [b, a, `b${i}`, `a${i}`];
      expect([won.code, lost.code], `round ${i}: ${a.message}${a.stderr} / ${b.message}${b.stderr}`).toEqual([0, 1]);
      expect(recordedBy.get(address), `round ${i}`).toEqual([winner]);
      expect(ids.get(loser), `round ${i}: the loser has no inventory`).toBeUndefined();
      expect(lost.message).toContain(
        `m/${loser}/route.yaml:4:1: ${address} is managed by stack "${winner}" (its inventory ${ids.get(winner)?.[0]} records it); ` +
          `stack "${loser}" does not change it: remove the circuit_breaker block, or take it over with --takeover`,
      );
      // One write to the module, the winner's.
      expect(
        w
          .writes(from)
          .filter((l) => l.path === cbPath(route))
          .map((l) => `${l.method} ${l.status}`),
        `round ${i}`,
      ).toEqual(["PUT 200"]);
      expect(await volume(w, route)).toBe(winner.startsWith("a") ? 10 : 20);
    }
    // No claim lease is left behind.
    expect((await w.list()).filter((wb) => wb.metadata.includes(`"stack":"${CLAIM_LEASE_KEY}"`))).toEqual([]);
  });

  it(`--takeover racing the owner's apply that records a new module: no entry is lost (${ROUNDS} rounds)`, async () => {
    const w = await startWorld({ fixtures });
    const files: Record<string, string> = {};
    for (let i = 0; i < ROUNDS; i++) {
      const [taken, added] = [ROUTES[2 * i] as string, ROUTES[2 * i + 1] as string];
      // The owner records `taken` already; its manifests now declare `added` (and keep `taken` as an orphan).
      expect((await w.raw.put(cbPath(taken), cbBody(5))).status).toBe(200);
      expect((await w.raw.post("/backends/weighted", buildInventoryBody(`o${i}`, { [cbAddress(taken)]: {} }))).status).toBe(201);
      files[`o${i}/route.yaml`] = cbYaml(added, 10);
      files[`t${i}/route.yaml`] = cbYaml(taken, 20);
    }
    w.manifests(files);
    const rounds = await inBatches(async (i) => ({ i, runs: await Promise.all([apply(w, `o${i}`, `o${i}`), apply(w, `t${i}`, `t${i}`, { takeover: true })]) }));
    const { recordedBy } = await inventories(w);
    for (const {
      i,
      runs: [owner, taker],
    } of rounds) {
      const [taken, added] = [ROUTES[2 * i] as string, ROUTES[2 * i + 1] as string];
      expect([owner.code, taker.code], `round ${i}: ${owner.message}${owner.stderr} / ${taker.message}${taker.stderr}`).toEqual([0, 0]);
      expect([recordedBy.get(cbAddress(taken)), recordedBy.get(cbAddress(added))], `round ${i}`).toEqual([[`t${i}`], [`o${i}`]]);
      expect([await volume(w, taken), await volume(w, added)], `round ${i}`).toEqual([20, 10]);
    }
  });

  it("an apply that claims nothing takes no claim lease; one that claims waits for a killed apply's claim lease to expire", async () => {
    const w = await startWorld({ fixtures });
    const route = ROUTES[0] as string;
    // A claim lease left by an apply killed while it claimed, valid 300 ms after its last renewal.
    const left = { host: "gone", pid: 1, started_at: "2026-01-01T00:00:00Z", token: "t" };
    const leaseRes = await w.raw.post("/backends/weighted", buildLeaseBody(CLAIM_LEASE_KEY, left, 300, 0));
    expect(leaseRes.status).toBe(201);
    const leaseId = (leaseRes.json as { id: string }).id;
    w.manifests({ "a/route.yaml": cbYaml(route, 10) });
    const claimed = await apply(w, "a", "a");
    expect(claimed.code, claimed.message).toBe(0);
    expect(claimed.stderr).toContain(
      `module ownership (the account's claim lease) is locked by host gone, process 1, started 2026-01-01T00:00:00Z (lease ${leaseId}); waiting for it`,
    );
    expect(claimed.stderr).toContain(`the lease of host gone, process 1, started 2026-01-01T00:00:00Z (lease ${leaseId}) expired (no renewal for 300ms); removed it`);
    expect((await inventories(w)).recordedBy.get(cbAddress(route))).toEqual(["a"]);

    // The module is the stack's already: changing it writes the module alone, between the stack lease's create and delete.
    w.manifests({ "a/route.yaml": cbYaml(route, 30) });
    const from = w.log().length;
    const changed = await apply(w, "a", "a");
    expect(changed.code, changed.message).toBe(0);
    expect(w.changeWrites(from).map((l) => `${l.method} ${l.path}`)).toEqual([`PUT ${cbPath(route)}`]);
    expect(await volume(w, route)).toBe(30);
  });

  it("state release of a module writes its inventory under the claim lease too", async () => {
    const w = await startWorld({ fixtures });
    const route = ROUTES[0] as string;
    w.manifests({ "a/route.yaml": cbYaml(route, 10) });
    expect((await apply(w, "a", "a")).code).toBe(0);
    const left = { host: "gone", pid: 1, started_at: "2026-01-01T00:00:00Z", token: "t" };
    const leaseId = ((await w.raw.post("/backends/weighted", buildLeaseBody(CLAIM_LEASE_KEY, left, 300, 0))).json as { id: string }).id;
    const io = quietIo(w);
    let out = "";
    io.stdout = (text: string) => {
      out += text;
    };
    expect(await runStateRelease(cbAddress(route), { stack: "a", rateLimit: "off" }, io)).toBe(0);
    expect(io.err).toContain(`module ownership (the account's claim lease) is locked by host gone, process 1, started 2026-01-01T00:00:00Z (lease ${leaseId})`);
    expect(out).toContain(`released ${cbAddress(route)}: stack "a" no longer manages it`);
    expect((await inventories(w)).recordedBy.size).toBe(0);
  });
});
