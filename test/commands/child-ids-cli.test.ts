/**
 * Child ids checked before writing, end to end (the built CLI against the real server): a child id the account
 * does not hold stops `plan` and `apply` at its manifest line (exit 1) before any write, with a suggestion when an id
 * of its kind is close; a correct id passes; and only the ids a change introduces are read, as the server's request
 * log shows.
 */
import { afterAll, describe, expect, it } from "vitest";
import { closeWorlds, FIXTURES, HR1, HR2, startWorld, type World } from "../apply/e2e.js";
import { fakeId } from "../helpers/server.js";

afterAll(closeWorlds);

/** A backend of the fixtures that no weighted backend references yet, and the same id with its last letter wrong. */
const HR3 = "bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw";
const TYPO = "bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gx";

const checkout = (third?: string): string =>
  ["kind: WeightedBackend", "name: checkout", "description: Checkout", "backends:", `  ${HR1}: 8000`, `  ${HR2}: 1000`, ...(third ? [`  ${third}: 1000`] : []), ""].join(
    "\n",
  );

async function world(): Promise<World> {
  return startWorld({ fixtures: { ...FIXTURES, backends: [...FIXTURES.backends, { id: HR3, type: "http_response" as const }] } });
}

/** The requests of the log from `from` on, as `METHOD path status`, sorted. */
function requests(w: World, from: number): string[] {
  return w
    .log(from)
    .map((l) => `${l.method} ${l.path} ${l.status}`)
    .sort();
}

describe("child ids checked before writing (built CLI, real server)", () => {
  it("an added child id the account does not hold: plan and apply exit 1 at its line, nothing written; the right id passes", async () => {
    const w = await world();
    w.manifests({ "checkout.yaml": checkout() });
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    const before = await w.list();

    w.manifests({ "checkout.yaml": checkout(TYPO) });
    const message = `edgeplan: m/checkout.yaml:7:3: weighted backend "checkout": child ${TYPO} does not exist: this account has no HTTP response backend with that id; did you mean ${HR3}?\n`;
    let from = w.log().length;
    const plan = await w.cli(["plan", "m"]);
    expect(plan.code).toBe(1);
    expect(plan.stdout).toBe("");
    expect(plan.stderr).toBe(message);
    // The unchanged children are not read; the new one is, and its kind is listed for the suggestion.
    expect(requests(w, from)).toEqual([`GET /backends/http_response 200`, `GET /backends/http_response/${TYPO} 404`, "GET /backends/weighted 200", "GET /edges/https 200"]);

    from = w.log().length;
    const apply = await w.cli(["apply", "m", "--auto-approve"]);
    expect(apply.code).toBe(1);
    expect(apply.stderr).toBe(message);
    expect(w.changeWrites(from)).toEqual([]);
    expect(await w.list()).toEqual(before);

    w.manifests({ "checkout.yaml": checkout(HR3) });
    from = w.log().length;
    const fixed = await w.cli(["plan", "m"]);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(fixed.stdout).toContain("Plan: 0 to create, 1 to update, 0 to delete.");
    expect(requests(w, from)).toEqual([`GET /backends/http_response/${HR3} 200`, "GET /backends/weighted 200", "GET /edges/https 200"]);
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    expect((await w.owned()).get("checkout")?.backends).toEqual({ [HR1]: 8000, [HR2]: 1000, [HR3]: 1000 });

    // Once applied, no change introduces a child: the plan reads no child at all, only the account's two listings.
    from = w.log().length;
    const again = await w.cli(["plan", "m"]);
    expect(again.stdout).toContain("No changes.");
    expect(requests(w, from)).toEqual(["GET /backends/weighted 200", "GET /edges/https 200"]);
  });

  it("a create naming ids nobody holds: every one reported at its line, without a suggestion when none is close", async () => {
    const w = await world();
    const far = fakeId("bkdtg", 123456);
    const weighted = fakeId("bkdwd", 42);
    w.manifests({ "new.yaml": ["kind: WeightedBackend", "name: fresh", "backends:", `  ${far}: 1`, `  ${weighted}: 1`, `  ${HR1}: 1`, ""].join("\n") });
    const from = w.log().length;
    const res = await w.cli(["plan", "m"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      `edgeplan: m/new.yaml:4:3: weighted backend "fresh": child ${far} does not exist: this account has no tunnel group backend with that id; check the id, or remove the child\n` +
        `m/new.yaml:5:3: weighted backend "fresh": child ${weighted} does not exist: this account has no weighted backend with that id; check the id, or remove the child\n`,
    );
    // The weighted backend is looked for in the listing, not read; the two child backends are read.
    expect(requests(w, from)).toEqual([
      `GET /backends/http_response/${HR1} 200`,
      `GET /backends/tunnel_group 200`,
      `GET /backends/tunnel_group/${far} 404`,
      "GET /backends/weighted 200",
      "GET /edges/https 200",
    ]);
    expect(w.writes(from)).toEqual([]);
  });

  it("plan --local provisions the children the manifests name in its embedded server first, so their check passes", async () => {
    const w = await world();
    w.manifests({ "checkout.yaml": checkout(TYPO) });
    const from = w.log().length;
    const res = await w.cli(["plan", "--local", "m"]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain("Plan: 1 to create, 0 to update, 0 to delete.");
    expect(w.log(from)).toEqual([]);
  });
});
