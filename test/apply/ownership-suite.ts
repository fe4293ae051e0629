/**
 * Ownership of route modules, end to end: the built CLI against the real server (SQLite here, PostgreSQL in
 * test/postgres/ownership.test.ts). A stack records the modules it manages in its inventory objects; another stack
 * is refused them without --takeover; a module whose block is removed is an orphan, pruned unless protected; a stack
 * applied before inventories existed records its modules on the next apply; `state list` and `state release`.
 */
import { describe, expect, it } from "vitest";
import { closeWorlds, EDGE, HR1, R1, startWorld, wbYaml, type World } from "./e2e.js";
import type { WeightedBackend } from "../../src/model/wire.js";

const CB_ADDR = `edge_route.${EDGE}/${R1}.circuit_breaker`;
const cbRoute = (volume: number, extra = ""): string =>
  `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${R1}\n${extra}circuit_breaker:\n  tripped_duration: 60\n  rolling_window: 120\n  num_buckets: 10\n  volume_threshold: ${volume}\n  error_threshold_percentage: 0.5\n`;
const CB_BODY = (volume: number) => ({ tripped_duration: 60, rolling_window: 120, num_buckets: 10, volume_threshold: volume, error_threshold_percentage: 0.5 });

/** The inventory objects of the account, as `{stack: entries}`. */
async function inventories(w: World): Promise<Array<{ id: string; stack: string; modules: Record<string, unknown> }>> {
  const out: Array<{ id: string; stack: string; modules: Record<string, unknown> }> = [];
  for (const wb of await w.list()) {
    const marker = (JSON.parse(wb.metadata || "{}") as { edgeplan?: { stack: string; inventory?: { modules: Record<string, unknown> } } }).edgeplan;
    if (marker?.inventory) out.push({ id: wb.id, stack: marker.stack, modules: marker.inventory.modules });
  }
  return out;
}

async function circuitBreaker(w: World): Promise<unknown> {
  const res = await w.raw.get(`/edges/https/${EDGE}/routes/${R1}/circuit_breaker`);
  return res.status === 404 ? null : (res.json as { volume_threshold: number }).volume_threshold;
}

/** The delete of the account's claim lease, which an apply that writes an inventory takes around its changes. */
const CLAIM_RELEASE = /^DELETE \/backends\/weighted\/bkdwd_\w{27}$/;

/** The requests of the log from `from` on, as `METHOD path`. */
const requests = (w: World, from: number): string[] => w.log(from).map((l) => `${l.method} ${l.path}`);

/** Registers the suite (the caller closes the worlds). */
export function ownershipSuite(): void {
  describe("route modules are owned by the stack that records them", () => {
    it("refuses another stack's module without --takeover, naming the stack and the manifest line; --takeover moves it", async () => {
      const w = await startWorld();
      w.manifests({ "route.yaml": cbRoute(20) });
      expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
      const [recorded] = await inventories(w);
      expect(recorded?.stack).toBe("default");
      expect(recorded?.modules).toEqual({ [CB_ADDR]: {} });

      w.manifests({ "typo.yaml": cbRoute(0) });
      const from = w.log().length;
      const refused = await w.cli(["apply", "m", "--stack", "typo", "--auto-approve"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `m/typo.yaml:4:1: ${CB_ADDR} is managed by stack "default" (its inventory ${recorded?.id} records it); ` +
          `stack "typo" does not change it: remove the circuit_breaker block, or take it over with --takeover\n`,
      );
      expect(w.changeWrites(from)).toEqual([]);
      expect(await circuitBreaker(w)).toBe(20);

      const taken = await w.cli(["apply", "m", "--stack", "typo", "--takeover", "--auto-approve"]);
      expect(taken.code, taken.stderr).toBe(0);
      expect(taken.stdout).toContain(`  # taken over from stack "default" (--takeover): its entry moves to the inventory of stack "typo"\n`);
      expect(taken.stdout).toContain(`  - inventory.default#1 (${recorded?.id})\n      - ${CB_ADDR}: forget ownership\n`);
      expect(taken.stdout).toContain(`  + inventory.typo#1\n      + ${CB_ADDR}: record ownership\n`);
      expect(await circuitBreaker(w)).toBe(0);
      expect((await inventories(w)).map((i) => [i.stack, i.modules])).toEqual([["typo", { [CB_ADDR]: {} }]]);

      w.manifests({ "route.yaml": cbRoute(20) });
      const back = await w.cli(["plan", "m"]);
      expect(back.code).toBe(1);
      const typoId = (await inventories(w))[0]?.id;
      expect(back.stderr).toContain(
        `m/route.yaml:4:1: ${CB_ADDR} is managed by stack "typo" (its inventory ${typoId} records it); ` +
          `stack "default" does not change it: remove the circuit_breaker block, or take it over with --takeover\n`,
      );
    });

    it("shows a removed module block as an orphan and deletes it with --prune, unless it was declared protected", async () => {
      const w = await startWorld();
      w.manifests({ "route.yaml": cbRoute(20), "checkout.yaml": wbYaml("checkout", { [HR1]: 1 }) });
      expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
      const id = (await inventories(w))[0]?.id as string;
      w.manifests({ "checkout.yaml": wbYaml("checkout", { [HR1]: 1 }) });
      const plan = await w.cli(["plan", "m"]);
      expect(plan.code).toBe(0);
      expect(plan.stdout).toContain(`No changes to the objects of the manifests; 1 orphan of stack "default" that no manifest names is kept (--prune deletes it).\n`);
      expect(plan.stdout).toContain(
        // By its own address: the id of the inventory record that lists it is no id of the module's.
        `Orphans: objects of stack "default" that no manifest names:\n    ${CB_ADDR}: no manifest declares it; run with --prune to delete it\n`,
      );
      expect(await circuitBreaker(w)).toBe(20);

      const from = w.log().length;
      const pruned = await w.cli(["apply", "m", "--prune", "--auto-approve"]);
      expect(pruned.code, pruned.stderr).toBe(0);
      // The account's claim lease around the changes: created first, deleted last.
      expect(w.changeWrites(from).map((l) => `${l.method} ${l.path}`)).toEqual([
        "POST /backends/weighted",
        `DELETE /edges/https/${EDGE}/routes/${R1}/circuit_breaker`,
        `DELETE /backends/weighted/${id}`,
        expect.stringMatching(CLAIM_RELEASE),
      ]);
      expect(await circuitBreaker(w)).toBeNull();
      expect(await inventories(w)).toEqual([]);
      expect((await w.cli(["plan", "m", "--prune"])).stdout).toBe("No changes. Live state matches the manifests.\n");

      w.manifests({ "route.yaml": cbRoute(20, "protect: true\n") });
      expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
      expect((await inventories(w)).map((i) => i.modules)).toEqual([{ [CB_ADDR]: { protect: true } }]);
      w.manifests({ "checkout.yaml": wbYaml("checkout", { [HR1]: 1 }) });
      const from2 = w.log().length;
      const protectedRun = await w.cli(["apply", "m", "--prune", "--auto-approve"]);
      expect(protectedRun.code, protectedRun.stderr).toBe(0);
      expect(protectedRun.stdout).toContain(
        `    ${CB_ADDR}: protected (protect: true was declared for it): never deleted until a manifest declares it again with protect: false\n`,
      );
      expect(w.changeWrites(from2)).toEqual([]);
      expect(await circuitBreaker(w)).toBe(20);
    });

    it("records the modules of a stack applied before inventories existed, with no change to them, then plans nothing", async () => {
      const w = await startWorld();
      expect((await w.raw.put(`/edges/https/${EDGE}/routes/${R1}/circuit_breaker`, CB_BODY(20))).status).toBe(200);
      w.manifests({ "route.yaml": cbRoute(20) });
      const from = w.log().length;
      const plan = await w.cli(["plan", "m"]);
      expect(plan.code).toBe(0);
      // The inventory is read with the listing every plan makes: no other read.
      expect(requests(w, from).sort()).toEqual(["GET /backends/weighted", "GET /edges/https"]);
      expect(plan.stdout).toBe(
        [
          'edgeplan will make these changes (stack "default"); symbols:',
          "  +  create",
          "",
          "  # inventory.default#1 will be created",
          "  + inventory.default#1",
          `      + ${CB_ADDR}: record ownership`,
          "",
          "Plan: 1 to create (1 inventory record), 0 to update, 0 to delete.",
          "Estimate: apply will send 5 requests (3 writes, 2 reads to check convergence); at 120/60s and 4 at once, that is about 1 s.",
          "",
        ].join("\n"),
      );
      const from2 = w.log().length;
      const applied = await w.cli(["apply", "m", "--auto-approve"]);
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stdout).toContain("Converged: the live state matches the manifests.");
      expect(w.changeWrites(from2).map((l) => `${l.method} ${l.path}`)).toEqual(["POST /backends/weighted", "POST /backends/weighted", expect.stringMatching(CLAIM_RELEASE)]);
      expect(await circuitBreaker(w)).toBe(20);
      expect((await w.cli(["plan", "m"])).stdout).toBe("No changes. Live state matches the manifests.\n");
    });

    it("state list shows what the stack owns; state release lets another stack adopt it, and the stack no longer sees an orphan", async () => {
      const w = await startWorld();
      w.manifests({ "route.yaml": cbRoute(20), "checkout.yaml": wbYaml("checkout", { [HR1]: 1 }, { protect: true }) });
      expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
      const checkout = (await w.owned()).get("checkout") as WeightedBackend;
      const inv = (await inventories(w))[0]?.id as string;

      const text = await w.cli(["state", "list"]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toBe(
        [
          'Stack "default" owns:',
          "  weighted backends (1):",
          `    weighted_backend.checkout ${checkout.id} (protected)`,
          "  route modules (1):",
          `    ${CB_ADDR}`,
          `Inventory objects (the modules it owns): ${inv}`,
          "Lease objects (an apply running): none",
          "",
        ].join("\n"),
      );
      const json = await w.cli(["state", "list", "--format", "json"]);
      expect(JSON.parse(json.stdout)).toEqual({
        format_version: 1,
        kind: "state",
        stack: "default",
        weighted_backends: [{ address: "weighted_backend.checkout", name: "checkout", id: checkout.id, protected: true }],
        modules: [{ address: CB_ADDR, protected: false, inventory: inv }],
        inventory: [inv],
        leases: [],
      });
      expect((await w.cli(["state", "list", "--stack", "typo"])).stdout).toContain("  weighted backends (0):\n    none\n  route modules (0):\n    none\n");

      const unknown = await w.cli(["state", "release", "weighted_backend.chekout"]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe(
        `edgeplan: state release: stack "default" does not own weighted_backend.chekout (did you mean weighted_backend.checkout?); ` +
          `it owns weighted_backend.checkout, ${CB_ADDR} (see: edgeplan state list)\n`,
      );

      const wb = await w.cli(["state", "release", "weighted_backend.checkout"]);
      expect(wb.code, wb.stderr).toBe(0);
      expect(wb.stdout).toBe(`released weighted_backend.checkout (${checkout.id}): its owner marker of stack "default" was removed; the object and its metadata are kept\n`);
      const module = await w.cli(["state", "release", CB_ADDR]);
      expect(module.code, module.stderr).toBe(0);
      expect(module.stdout).toBe(`released ${CB_ADDR}: stack "default" no longer manages it (its inventory ${inv} forgot it); the module is kept\n`);
      expect(await circuitBreaker(w)).toBe(20);
      expect(await inventories(w)).toEqual([]);
      const released = (await w.list()).find((o) => o.id === checkout.id);
      expect(released?.metadata).toBe("");
      expect(released?.backends).toEqual({ [HR1]: 1 });

      w.manifests({ "other.yaml": wbYaml("other", { [HR1]: 1 }) });
      const none = await w.cli(["plan", "m", "--prune"]);
      expect(none.code, none.stderr).toBe(0);
      expect(none.stdout).toContain("Plan: 1 to create, 0 to update, 0 to delete.\n");
      expect(none.stdout).not.toContain("Orphans");

      w.manifests({ "route.yaml": cbRoute(20), "checkout.yaml": wbYaml("checkout", { [HR1]: 1 }, { id: checkout.id }) });
      const adopted = await w.cli(["apply", "m", "--stack", "typo", "--auto-approve"]);
      expect(adopted.code, adopted.stderr).toBe(0);
      expect(adopted.stdout).toContain(`  + inventory.typo#1\n      + ${CB_ADDR}: record ownership\n`);
      expect(adopted.stdout).toContain("weighted_backend.checkout will be adopted");
      expect((await w.owned("typo")).get("checkout")?.id).toBe(checkout.id);
      expect((await inventories(w)).map((i) => [i.stack, i.modules])).toEqual([["typo", { [CB_ADDR]: {} }]]);
    });
  });
}

export { closeWorlds };
