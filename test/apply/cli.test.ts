/**
 * `edgeplan apply` end to end: the BUILT CLI (node dist/cli/edgeplan.js) against the real server, manifests written into
 * temporary folders. What is asserted is what a user checks: exit codes, the report, and what the server holds
 * afterwards (and, from its request log, the order of the writes).
 */
import { afterAll, describe, expect, it } from "vitest";
import type { WeightedBackend } from "../../src/model/wire.js";
import { closeWorlds, EDGE, HR1, HR2, IDP_XML, markerOf, R1, R2, seed, startWorld, wbYaml, type World } from "./e2e.js";

afterAll(closeWorlds);

const APPLY = ["apply", "m", "--auto-approve"];
const idOf = (path: string): string => path.split("/").pop() as string;

async function expectConverged(world: World, extra: string[] = []): Promise<void> {
  const plan = await world.cli(["plan", "m", "--detailed-exitcode", ...extra]);
  expect(plan.stderr).toBe("");
  expect(plan.stdout).toContain("No changes. Live state matches the manifests.");
  expect(plan.code).toBe(0);
}

const routeYaml = (route: string, body: string): string => `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${route}\n${body}`;
const CB_YAML = "circuit_breaker:\n  tripped_duration: 120\n  rolling_window: 300\n  num_buckets: 5\n  volume_threshold: 20\n  error_threshold_percentage: 0.2\n";
const SAML_YAML = "saml:\n  idp_metadata_file: okta.xml\n  allow_idp_initiated: false\n  authorized_groups: [engineering]\n";

// Every test has its own server and folder, so they run side by side.
describe.concurrent("edgeplan apply (built CLI, real server)", { timeout: 90_000 }, () => {
  describe("apply: every kind of change", () => {
    it("creates, updates, renames, adopts, takes over, deletes and replaces modules; plan then shows no change", async () => {
      const w = await startWorld();
      const toAdopt = await seed(w, { description: "by hand", backends: { [HR1]: 10 } });
      const toTakeOver = await seed(w, { metadata: JSON.stringify({ edgeplan: { stack: "other", name: "o" } }), backends: { [HR2]: 10 } });

      // 1. Creates and module sets.
      w.manifests({
        "a.yaml": wbYaml("a", { [HR1]: 100 }, { description: "A" }),
        "b.yaml": wbYaml("b", { [HR2]: 100 }),
        "d.yaml": wbYaml("d", { [HR1]: 1, [HR2]: 1 }),
        "routes.yaml": `${routeYaml(R1, SAML_YAML)}---\n${routeYaml(R2, CB_YAML)}`,
        "okta.xml": IDP_XML,
      });
      const first = await w.cli(APPLY);
      expect(first.code).toBe(0);
      // The two modules are declared for the first time: one inventory write records them.
      expect(first.stdout).toContain("Plan: 6 to create (3 weighted backends, 2 modules, 1 inventory record), 0 to update, 0 to delete.");
      expect(first.stdout).toContain("\nApply complete: 6 done.\n");
      expect(first.stdout).toContain("\nConverged: the live state matches the manifests.\n");
      // The outputs come from the module as the server holds it now.
      expect(first.stdout).toContain(
        `Outputs: copy these into the IdP:\n  edge_route.${EDGE}/${R1}.saml\n    entity id:           https://idp.edgeplan.localhost/saml/${R1}\n`,
      );
      expect(first.stdout).toMatch(/certificate SHA-256: [0-9A-F]{2}(:[0-9A-F]{2}){31}\n/);
      expect(first.stderr).toMatch(/^weighted_backend\.a: created bkdwd_\w{27} \(\d+ ms\)$/m);
      expect(first.stderr).toMatch(new RegExp(`^edge_route\\.${EDGE}/${R2}\\.circuit_breaker: set \\(\\d+ ms\\)$`, "m"));
      await expectConverged(w);
      const v1 = await w.owned();
      expect([...v1.keys()].sort()).toEqual(["a", "b", "d"]);

      // 2. Update a, rename b to b2, delete d (prune), adopt one, take over another, delete SAML, change the circuit breaker.
      w.manifests({
        "a.yaml": wbYaml("a", { [HR1]: 100 }, { description: "A2" }),
        "b.yaml": wbYaml("b2", { [HR2]: 100 }),
        "f.yaml": `${wbYaml("f", { [HR1]: 10 }, { description: "by hand" })}id: ${toAdopt.id}\n`,
        "o.yaml": `${wbYaml("o", { [HR2]: 10 })}id: ${toTakeOver.id}\n`,
        "routes.yaml": `${routeYaml(R1, "saml: absent\n")}---\n${routeYaml(R2, CB_YAML.replace("num_buckets: 5", "num_buckets: 10"))}`,
      });
      const mark = w.log().length;
      const second = await w.cli([...APPLY, "--prune", "--takeover", "--ack", "auth-removal"]);
      expect(second.code).toBe(0);
      // The SAML module's delete forgets its inventory entry.
      expect(second.stdout).toContain(
        "Plan: 0 to create, 3 to update (1 weighted backend, 1 module, 1 inventory record), 2 to delete (1 weighted backend, 1 module), 1 to adopt, 1 to take over, 1 to rename.",
      );
      expect(second.stdout).toContain("\nApply complete: 8 done.\n");
      expect(second.stdout).toContain("\nConverged: the live state matches the manifests.\n");
      expect(second.stderr).toContain(`weighted_backend.b2: renamed from "b" ${v1.get("b")?.id}`);
      expect(second.stderr).toContain(`weighted_backend.f: adopted ${toAdopt.id}`);
      expect(second.stderr).toContain(`weighted_backend.o: taken over ${toTakeOver.id}`);
      // The plan writes an inventory: the account's claim lease is created before its changes and deleted after them.
      const writes = w.changeWrites(mark);
      expect([`${writes[0]?.method} ${writes[0]?.path}`, writes.at(-1)?.method]).toEqual(["POST /backends/weighted", "DELETE"]);
      expect(
        writes
          .slice(1, -1)
          .map((l) => l.method)
          .sort(),
      ).toEqual(["DELETE", "DELETE", "PATCH", "PATCH", "PATCH", "PATCH", "PATCH", "PUT"]);

      const v2 = await w.owned();
      expect([...v2.keys()].sort()).toEqual(["a", "b2", "f", "o"]);
      expect(v2.get("a")).toMatchObject({ id: v1.get("a")?.id, description: "A2", backends: { [HR1]: 100 } });
      expect(v2.get("b2")).toMatchObject({ id: v1.get("b")?.id, backends: { [HR2]: 100 } }); // the id is kept
      expect(v2.get("f")).toMatchObject({ id: toAdopt.id, description: "by hand", backends: { [HR1]: 10 } });
      expect(v2.get("o")?.id).toBe(toTakeOver.id);
      expect((await w.raw.get(`/backends/weighted/${v1.get("d")?.id}`)).status).toBe(404);
      const saml = await w.raw.get(`/edges/https/${EDGE}/routes/${R1}/saml`);
      expect([saml.status, saml.json.error_code]).toEqual([404, "ERR_NGROK_7400"]);
      expect((await w.raw.get(`/edges/https/${EDGE}/routes/${R2}/circuit_breaker`)).json.num_buckets).toBe(10);
      await expectConverged(w, ["--prune", "--takeover"]);

      // 3. Nothing to change: said so, exit 0, no write.
      const mark3 = w.log().length;
      const third = await w.cli([...APPLY, "--prune"]);
      expect(third.code).toBe(0);
      expect(third.stdout).toBe("No changes. Live state matches the manifests.\n");
      expect(third.stderr).toBe("Nothing to apply: no change was sent.\n");
      expect(w.changeWrites(mark3)).toEqual([]);
    });

    it("a description-only change sends the full body and keeps the children", async () => {
      const w = await startWorld();
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 70, [HR2]: 30 }, { description: "one" }) });
      expect((await w.cli(APPLY)).code).toBe(0);
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 70, [HR2]: 30 }, { description: "two" }) });
      const mark = w.log().length;
      const run = await w.cli(APPLY);
      expect(run.code).toBe(0);
      expect(w.changeWrites(mark).map((l) => l.method)).toEqual(["PATCH"]);
      expect((await w.owned()).get("x")).toMatchObject({ description: "two", backends: { [HR1]: 70, [HR2]: 30 } });
    });
  });

  describe("apply: order of nested references", () => {
    it("creates a -> b -> c bottom-up and deletes them top-down with --prune", async () => {
      const w = await startWorld();
      w.manifests({
        "chain.yaml": [wbYaml("a", { b: 100 }), wbYaml("b", { c: 100, [HR1]: 1 }), wbYaml("c", { [HR1]: 100 })].join("---\n"),
        "keep.yaml": wbYaml("keep", { [HR2]: 100 }),
      });
      const created = await w.cli(APPLY);
      expect(created.code).toBe(0);
      const o = await w.owned();
      const [a, b, c] = [o.get("a"), o.get("b"), o.get("c")] as [WeightedBackend, WeightedBackend, WeightedBackend];
      expect(a.backends).toEqual({ [b.id]: 100 });
      expect(b.backends).toEqual({ [c.id]: 100, [HR1]: 1 });
      // Ids are monotonic on this server (creation order): c was created before b, b before a.
      expect([c.id < b.id, b.id < a.id]).toEqual([true, true]);
      await expectConverged(w);

      w.manifests({ "keep.yaml": wbYaml("keep", { [HR2]: 100 }) });
      const mark = w.log().length;
      const pruned = await w.cli([...APPLY, "--prune"]);
      expect(pruned.code).toBe(0);
      expect(pruned.stdout).toContain("Plan: 0 to create, 0 to update, 3 to delete.");
      // The server refuses to delete an object another one still references: the order is the only way this passes.
      expect(w.changeWrites(mark).map((l) => `${l.method} ${idOf(l.path)} ${l.status}`)).toEqual([`DELETE ${a.id} 204`, `DELETE ${b.id} 204`, `DELETE ${c.id} 204`]);
      expect([...(await w.owned()).keys()]).toEqual(["keep"]);
    });
  });

  describe("apply: ownership", () => {
    it("never touches foreign objects or another stack's, even with --prune", async () => {
      const w = await startWorld();
      const foreign = await seed(w, { description: "no marker", backends: { [HR1]: 1 } });
      const other = await seed(w, { metadata: JSON.stringify({ edgeplan: { stack: "other", name: "x" } }), backends: { [HR1]: 2 } });
      w.manifests({ "x.yaml": wbYaml("x", { [HR2]: 100 }) });
      const run = await w.cli([...APPLY, "--prune"]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("Plan: 1 to create, 0 to update, 0 to delete.");
      const all = await w.list();
      expect(all.find((x) => x.id === foreign.id)).toEqual(foreign);
      expect(all.find((x) => x.id === other.id)).toEqual(other);
      expect(all).toHaveLength(3);
    });

    it("deletes orphans only with --prune", async () => {
      const w = await startWorld();
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }), "y.yaml": wbYaml("y", { [HR2]: 100 }) });
      expect((await w.cli(APPLY)).code).toBe(0);
      const y = (await w.owned()).get("y") as WeightedBackend;
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
      const kept = await w.cli(APPLY);
      expect(kept.code).toBe(0);
      expect(kept.stdout).toContain(`weighted_backend.y (${y.id}): no manifest names it; run with --prune to delete it`);
      expect((await w.owned()).has("y")).toBe(true);
      const pruned = await w.cli([...APPLY, "--prune"]);
      expect(pruned.code).toBe(0);
      expect(pruned.stderr).toContain(`weighted_backend.y: deleted ${y.id}`);
      expect([...(await w.owned()).keys()]).toEqual(["x"]);
    });

    it("keeps a protected object even with --prune after its manifest is gone, until protect: false is applied", async () => {
      const w = await startWorld();
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }), "p.yaml": wbYaml("p", { [HR2]: 100 }, { protect: true }) });
      expect((await w.cli(APPLY)).code).toBe(0);
      const p = (await w.owned()).get("p") as WeightedBackend;
      expect(markerOf(p)).toEqual({ stack: "default", name: "p", protect: true });

      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
      const kept = await w.cli([...APPLY, "--prune"]);
      expect(kept.code).toBe(0);
      expect(kept.stdout).toContain(`weighted_backend.p (${p.id}): protected`);
      expect((await w.owned()).get("p")?.id).toBe(p.id);

      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }), "p.yaml": wbYaml("p", { [HR2]: 100 }, { protect: false }) });
      expect((await w.cli(APPLY)).code).toBe(0);
      expect(markerOf((await w.owned()).get("p") as WeightedBackend)).toEqual({ stack: "default", name: "p" });

      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
      const pruned = await w.cli([...APPLY, "--prune"]);
      expect(pruned.code).toBe(0);
      expect([...(await w.owned()).keys()]).toEqual(["x"]);
    });
  });

  describe("apply: saved plans", () => {
    it("refuses a stale plan naming the object, and --refresh plans again and applies", async () => {
      const w = await startWorld();
      w.manifests({ "s.yaml": wbYaml("s", { [HR1]: 100 }, { description: "one" }) });
      expect((await w.cli(APPLY)).code).toBe(0);
      const s = (await w.owned()).get("s") as WeightedBackend;

      w.manifests({ "s.yaml": wbYaml("s", { [HR1]: 100 }, { description: "two" }) });
      expect((await w.cli(["plan", "m", "--out", "plan.json"])).code).toBe(0);
      const edit = await w.raw.patch(`/backends/weighted/${s.id}`, { description: "by hand", metadata: s.metadata, backends: s.backends });
      expect(edit.status).toBe(200);

      const mark = w.log().length;
      const refused = await w.cli(["apply", "--plan", "plan.json", "--auto-approve"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        [
          "edgeplan: the saved plan plan.json is stale: 1 object it touches has changed since it was made:",
          `  weighted_backend.s (${s.id}): changed since the plan was made`,
          "No change was sent. Plan again with: edgeplan plan --out plan.json; or pass --refresh to plan again from the manifests and apply that.",
          "",
        ].join("\n"),
      );
      expect(refused.stdout).toBe("");
      // The lease (its create, the listing that finds other leases, its delete); then only the touched object was
      // read again, and no change was written.
      const seen = w.log(mark).map((l) => `${l.method} ${l.path}`);
      expect(seen.slice(0, 3)).toEqual(["POST /backends/weighted", "GET /backends/weighted", `GET /backends/weighted/${s.id}`]);
      expect(seen[3]).toMatch(/^DELETE \/backends\/weighted\/bkdwd_\w{27}$/);
      expect(seen).toHaveLength(4);

      const refreshed = await w.cli(["apply", "m", "--plan", "plan.json", "--refresh", "--auto-approve"]);
      expect(refreshed.code).toBe(0);
      expect(refreshed.stderr).toContain("the saved plan plan.json is stale (weighted_backend.s); --refresh: planning again from the manifests\n");
      expect(refreshed.stdout).toContain('~ description: "by hand" -> "two"');
      expect(refreshed.stdout).toContain("\nConverged: the live state matches the manifests.\n");
      expect((await w.owned()).get("s")?.description).toBe("two");
    });

    it("applies a fresh saved plan, and refuses a planned create whose object exists by now", async () => {
      const w = await startWorld();
      w.manifests({ "n.yaml": wbYaml("n", { [HR1]: 100 }) });
      expect((await w.cli(["plan", "m", "--out", "create.json"])).code).toBe(0);
      expect((await w.cli(["plan", "m", "--out", "create-again.json"])).code).toBe(0);

      const applied = await w.cli(["apply", "--plan", "create.json", "--auto-approve"]);
      expect(applied.code).toBe(0);
      expect(applied.stdout).toContain("\nConverged: the live state matches the plan.\n");
      const n = (await w.owned()).get("n") as WeightedBackend;

      const stale = await w.cli(["apply", "--plan", "create-again.json", "--auto-approve"]);
      expect(stale.code).toBe(1);
      expect(stale.stderr).toContain(`  weighted_backend.n: is planned as a create, but ${n.id} carries its owner marker by now\n`);
      expect([...(await w.owned()).keys()]).toEqual(["n"]);
    });

    it("refuses a file that is not a plan", async () => {
      const w = await startWorld();
      w.manifests({ "n.yaml": wbYaml("n", { [HR1]: 100 }) });
      const notJson = await w.cli(["apply", "--plan", "m/n.yaml", "--auto-approve"]);
      expect(notJson.code).toBe(1);
      expect(notJson.stderr).toBe("edgeplan: --plan m/n.yaml: the file is not JSON, so it is not a saved plan; make one with: edgeplan plan --out m/n.yaml\n");
      expect(w.log()).toEqual([]);
    });
  });

  describe("apply: refusals", () => {
    it("refuses without a terminal and without --auto-approve, after showing the plan", async () => {
      const w = await startWorld();
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
      const run = await w.cli(["apply", "m"]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain("Plan: 1 to create, 0 to update, 0 to delete.");
      expect(run.stderr).toBe(
        "edgeplan: apply needs approval, and there is no terminal to ask on; no change was sent. Review the plan above, then run again with --auto-approve " +
          "(in CI, apply a reviewed saved plan: edgeplan apply --plan FILE --auto-approve)\n",
      );
      expect(w.changeWrites()).toEqual([]);
    });

    it("refuses a risk until it is acknowledged with --ack, and rejects unknown rules", async () => {
      const w = await startWorld();
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100, [HR2]: 0 }) });
      expect((await w.cli(APPLY)).code).toBe(0);
      w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 0, [HR2]: 100 }) });
      const mark = w.log().length;

      const refused = await w.cli(APPLY);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /^edgeplan: the plan has 1 risk that must be acknowledged before it is applied:\n {2}traffic-shift \(--ack traffic-shift\): weighted_backend\.x: traffic moves/,
      );
      expect(refused.stderr).toContain("\nNo change was sent. If the plan is what you want, apply it with --ack traffic-shift (or --force to acknowledge every risk).\n");

      const unknown = await w.cli([...APPLY, "--ack", "trafic-shift"]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe('edgeplan: --ack: unknown rule "trafic-shift"; the rules are auth-removal, traffic-shift, no-traffic, mass-delete\n');
      // The refused run wrote only its lease; the unknown rule was refused before anything was sent.
      expect(w.changeWrites(mark)).toEqual([]);

      const acked = await w.cli([...APPLY, "--ack", "traffic-shift"]);
      expect(acked.code).toBe(0);
      expect((await w.owned()).get("x")?.backends).toEqual({ [HR1]: 0, [HR2]: 100 });
    });
  });

  describe("apply: failures and interruptions", () => {
    it("exits 3 when a change fails: its dependents are skipped, the rest is applied, the report names the manifest line", async () => {
      const w = await startWorld();
      const k = await seed(w, { description: "child", backends: { [HR1]: 1 } });
      w.manifests({
        "p.yaml": `# p points at an object that is deleted behind edgeplan's back\n${wbYaml("p", { [k.id]: 100 })}`,
        "q.yaml": wbYaml("q", { p: 100 }),
        "r.yaml": wbYaml("r", { [HR2]: 100 }),
      });
      expect((await w.cli(["plan", "m", "--out", "plan.json"])).code).toBe(0);
      expect((await w.raw.del(`/backends/weighted/${k.id}`)).status).toBe(204);

      const run = await w.cli(["apply", "--plan", "plan.json", "--auto-approve"]);
      expect(run.code).toBe(3);
      expect(run.stdout).toContain("\nApply finished with failures: 1 done, 1 failed, 1 skipped.\n");
      expect(run.stdout).toMatch(
        new RegExp(`\\n {2}failed {3}weighted_backend\\.p: m/p\\.yaml:2:1: POST /backends/weighted: 400 ERR_NGROK_6501: backends\\.${k.id}: backend ${k.id} does not exist`),
      );
      expect(run.stdout).toContain("\n  skipped  weighted_backend.q: depends on weighted_backend.p, which failed\n");
      expect(run.stdout).toContain(
        "\nNot converged: 2 objects do not match the plan yet:\n  weighted_backend.p will be created\n  weighted_backend.q will be created (skipped)\n",
      );
      expect([...(await w.owned()).keys()]).toEqual(["r"]);
    });

    it("with a 50% drop rate, creates nothing twice and converges", async () => {
      // Seed 1 draws 0.63, 0.003, ...: the second successful write is dropped, whatever order the writes come in.
      const w = await startWorld({ dropRate: 0.5, faultSeed: 1 });
      const files: Record<string, string> = {
        "chain.yaml": [wbYaml("c1", { c2: 100 }), wbYaml("c2", { c3: 100 }), wbYaml("c3", { [HR1]: 100 })].join("---\n"),
        "routes.yaml": routeYaml(R2, CB_YAML),
      };
      for (let i = 1; i <= 9; i++) files[`s${i}.yaml`] = wbYaml(`s${i}`, { [HR1]: i, [HR2]: 10 - i });
      w.manifests(files);
      const codes: Array<number | null> = [];
      let last = "";
      for (let run = 0; run < 3 && codes.at(-1) !== 0; run++) {
        const r = await w.cli([...APPLY, "--retries", "12"]);
        codes.push(r.code);
        last = r.stdout;
        await w.owned(); // asserts that no two objects carry the same marker
      }
      // The last run converged, and said so.
      expect(codes.at(-1), codes.join(", ")).toBe(0);
      expect(last).toContain("\nConverged: the live state matches the manifests.\n");
      const owned = await w.owned();
      expect(owned.size).toBe(12);
      // The twelve, and the one inventory object that records the circuit breaker (its create found again, too).
      expect(await w.list()).toHaveLength(13);
      expect(owned.get("c1")?.backends).toEqual({ [owned.get("c2")?.id as string]: 100 });
      // The faults really happened: some creates were committed and their answers cut.
      expect(w.log().filter((l) => l.method === "POST" && l.dropped).length).toBeGreaterThan(0);
      await expectConverged(w);
    });

    it("Ctrl-C lets the request in flight finish, starts nothing new, exits 130; apply again finishes the job", async () => {
      const w = await startWorld({ latency: [300, 300] });
      w.manifests(Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`w${i}.yaml`, wbYaml(`w${i}`, { [HR1]: i })])));
      const running = w.spawnCli([...APPLY, "--concurrency", "1"]);
      for (let i = 0; i < 300 && !/created bkdwd_/.test(running.stderr()); i++) await new Promise((r) => setTimeout(r, 20));
      running.proc.kill("SIGINT");
      const run = await running.done;
      expect(run.code).toBe(130);
      expect(run.stderr).toContain("\nSIGINT received: no new request will start; waiting for the requests in flight to finish (send SIGINT again to stop at once)\n");
      const m = /\nApply interrupted \(SIGINT\): (\d) done, (\d) not started\.\n/.exec(run.stdout);
      expect(m).not.toBeNull();
      const [done, notStarted] = [Number(m?.[1]), Number(m?.[2])];
      expect(done + notStarted).toBe(5);
      expect(notStarted).toBeGreaterThan(0);
      expect(run.stdout).toContain("Not checked for convergence: the run was interrupted. Run apply again to finish it (nothing is created twice).");
      expect((await w.owned()).size).toBe(done);

      const again = await w.cli(APPLY);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain(`Plan: ${notStarted} to create, 0 to update, 0 to delete.`);
      expect([...(await w.owned()).keys()].sort()).toEqual(["w1", "w2", "w3", "w4", "w5"]);
      expect(await w.list()).toHaveLength(5);
    });
  });
});
