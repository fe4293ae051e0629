/** The quick start's main job: `edgeplan demo` plans, applies and re-plans the examples on an embedded server. */
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/server.js";

describe("edgeplan demo", () => {
  it("applies the examples from nothing, then shows that nothing is left to do", async () => {
    const res = await runCli(["demo"], { NO_COLOR: "1" }, 60_000);
    expect(res.code).toBe(0);
    expect(res.stderr).toContain("== 1/3 plan");
    expect(res.stderr).toContain("local: provisioned edge ");
    expect(res.stderr).toMatch(/weighted_backend\.storefront-blue: created bkdwd_[0-9A-Za-z]{27}/);
    expect(res.stderr).toContain("Demo done: the second plan has nothing to do.");
    // Run from the repository, the examples are below the folder, so the copy command names them relatively.
    expect(res.stderr.trimEnd().split("\n").at(-1)).toBe(
      "Demo done: the second plan has nothing to do. Next, on a copy of the examples in your own folder: " +
        "cp -r examples edgeplan-examples && edgeplan plan --local edgeplan-examples",
    );
    // The first plan creates everything the examples declare, shown once (the apply does not show it again); the
    // last one has nothing to do. Each change is listed once, by its progress line; the report counts them.
    const lines = res.stdout.split("\n");
    expect(lines.filter((l) => l.startsWith("Plan: "))).toEqual(["Plan: 12 to create (6 weighted backends, 5 modules, 1 inventory record), 0 to update, 0 to delete."]);
    expect(lines.filter((l) => l.startsWith("edgeplan will make these changes"))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith("  done "))).toEqual([]);
    expect(res.stdout).toContain("\nApply complete: 12 done.\n");
    expect(res.stderr.match(/^weighted_backend\.storefront-blue: created /gm)).toHaveLength(1);
    // The IdP values, once: the plan names the three SAML modules, the apply shows their values, the last plan says nothing.
    expect(lines.filter((l) => l.startsWith("Outputs: "))).toEqual([
      "Outputs: IdP values of these SAML modules, known after apply (the apply shows them, to copy into the IdP):",
      "Outputs: copy these into the IdP:",
    ]);
    expect(lines.filter((l) => l.startsWith("    entity id: "))).toHaveLength(3);
    expect(res.stdout).not.toContain("The IdP values");
    expect(res.stdout).toContain("Converged: the live state matches the manifests.");
    expect(
      res.stdout
        .trimEnd()
        .split("\n")
        .filter((l) => l === "No changes. Live state matches the manifests."),
    ).toHaveLength(1);
  });
});
