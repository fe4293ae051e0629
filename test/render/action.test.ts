/** The GitHub Action's Markdown: comment, job summary, drift issue, the apply's report with one outputs block. */
import { describe, expect, it } from "vitest";
import { startsWithMarker } from "../../src/action/github.js";
import {
  boundDiagnostic,
  commentMarker,
  cutMarkdown,
  driftMarker,
  fitBytes,
  renderActionApply,
  renderComment,
  renderDrift,
  renderDriftResolved,
  renderFailure,
  renderJobSummary,
} from "../../src/render/action.js";
import { desiredRoute, EDGE, liveRouteOf, plan, present, ROUTE, samlModule, samlSettings, unmanaged } from "../core/builders.js";

describe("comment and summary text", () => {
  it("marks the sticky comment per stack", () => {
    expect(commentMarker("prod")).toBe("<!-- edgeplan:plan stack=prod -->");
    expect(startsWithMarker("<!-- edgeplan:plan stack=prod -->\n### plan", commentMarker("prod"))).toBe(true);
    expect(startsWithMarker("<!-- edgeplan:plan stack=prod2 -->\n", commentMarker("prod"))).toBe(false);
    expect(startsWithMarker("> <!-- edgeplan:plan stack=prod -->", commentMarker("prod"))).toBe(false);
  });

  it("leaves text within the limit alone", () => {
    expect(cutMarkdown("short", 10, "note")).toBe("short");
  });

  it("cuts at a line and closes an open fence and details block", () => {
    const md = ["# Plan", "<details><summary>x</summary>", "", "```diff", ...Array.from({ length: 50 }, (_, i) => `+ line ${i}`), "```", "</details>"].join("\n");
    const cut = cutMarkdown(md, 200, "(cut)");
    expect(cut.length).toBeLessThanOrEqual(200);
    expect(cut.startsWith("# Plan\n<details><summary>x</summary>\n\n```diff\n+ line 0\n")).toBe(true);
    expect(cut.endsWith("\n```\n\n</details>\n\n(cut)\n")).toBe(true);
    // Every kept line is a whole line of the original.
    const kept = cut.split("\n```\n\n</details>")[0]!.split("\n");
    for (const line of kept) expect(md.split("\n")).toContain(line);
  });

  it("keeps a comment body within GitHub's limit and points at the summary", () => {
    const markdown = `| summary |\n|---|\n${"x".repeat(100)}\n`.repeat(1000);
    const body = renderComment({ marker: commentMarker("s"), title: "edgeplan plan", markdown, runUrl: "https://github.com/a/b/actions/runs/1" });
    expect(body.length).toBeLessThanOrEqual(65_536);
    expect(body.length).toBeGreaterThan(60_000);
    expect(body.startsWith("<!-- edgeplan:plan stack=s -->\n### edgeplan plan\n\n| summary |")).toBe(true);
    expect(body).toContain("the full plan is in the job summary of [this run](https://github.com/a/b/actions/runs/1).");
    const small = renderComment({ marker: "<!-- m -->", title: "t", markdown: "plan", headSha: "abcdef0123" });
    expect(small).toBe("<!-- m -->\n### t\n\nplan\n\n<sub>Commit abcdef0</sub>\n");
  });

  it("cuts a summary to 1 MiB in bytes", () => {
    const big = "é".repeat(700_000) + "\n";
    const lines = `${"é".repeat(1000)}\n`.repeat(700);
    expect(Buffer.byteLength(fitBytes(big + lines, 1024 * 1024))).toBeLessThanOrEqual(1024 * 1024);
    expect(fitBytes("small")).toBe("small");
    expect(renderJobSummary("edgeplan plan: stack `s`", "small")).toBe("### edgeplan plan: stack `s`\n\nsmall\n\n");
    expect(renderJobSummary("t", "## own heading\n")).toBe("## own heading\n\n");
  });
});

describe("apply report", () => {
  it("shows the outputs once: the apply's, with the applied plan folded below without its own", () => {
    const p = plan(
      { routes: [desiredRoute(present(samlSettings({ allow_idp_initiated: false })), unmanaged)] },
      { routes: [liveRouteOf(samlModule(ROUTE, { allow_idp_initiated: true }), null)] },
    );
    expect(p.outputs).toHaveLength(1);
    const applied = "### edgeplan apply: stack `default`\n\n**Apply complete: 1 done.**\n\n#### Outputs: copy these into the IdP\n\n- x\n";
    const md = renderActionApply(p, applied);
    expect(md.match(/#### Outputs/g)).toHaveLength(1);
    expect(md.startsWith(applied.trimEnd() + "\n\n<details><summary>The plan that was applied</summary>\n\n### edgeplan plan: stack `default`")).toBe(true);
    expect(md).toContain(`| \`~\` | \`edge_route.${EDGE}/${ROUTE}.saml\` |`);
    expect(md.endsWith("\n\n</details>")).toBe(true);
    // Without an apply report (nothing was applied), the plan keeps its outputs: those it sets, none it leaves as they are.
    expect(renderActionApply(p, undefined)).not.toContain("#### Outputs");
    const created = plan({ routes: [desiredRoute(present(samlSettings({})), unmanaged)] }, { routes: [liveRouteOf(null, null)] });
    expect(renderActionApply(created, undefined).match(/#### Outputs/g)).toHaveLength(1);
  });

  it("puts a failure above what the run had shown", () => {
    const diagnostics = [{ severity: "error" as const, pos: { file: "m.yaml", line: 2, col: 3 }, message: "bad" }];
    expect(renderFailure("plan", diagnostics, undefined)).toBe(
      "**The plan failed.**\n\n1 error in the manifests; nothing was sent to the API:\n\n```text\nm.yaml:2:3: bad\n```",
    );
    expect(renderFailure("apply", [], "refused", "#### Risks\n")).toBe("**The apply failed.**\n\n```text\nrefused\n```\n\n#### Risks");
  });

  it("posts no diagnostic longer than a manifest line: its start and its advice", () => {
    const at = { file: "m.yaml", line: 1, col: 1 };
    const short = { severity: "error" as const, pos: at, message: "x".repeat(500) };
    expect(boundDiagnostic(short)).toBe(short);
    const quoted = "word ".repeat(200);
    const long = boundDiagnostic({ severity: "error", pos: at, message: `YAML: ${quoted}; fix it` });
    expect(long).toEqual({ severity: "error", pos: at, message: `YAML: ${quoted.slice(0, 354)}...[554 more characters]...${quoted.slice(-92)}; fix it` });
    expect(long.message.length).toBeLessThanOrEqual(520);
  });
});

describe("drift issue", () => {
  it("opens with the stack's marker, links the run, and folds the plan", () => {
    const body = renderDrift({ stack: "prod", summary: "Plan: 1 to create.", markdown: "### plan\n", runUrl: "https://github.com/a/b/actions/runs/9", issue: true });
    expect(body).toBe(
      `${driftMarker("prod")}\nLive state of stack \`prod\` differs from the manifests. Found by [this run](https://github.com/a/b/actions/runs/9): Plan: 1 to create.\n\n` +
        "Apply the manifests again, or change them to match what live holds. This issue is closed by the first drift check that finds no changes.\n\n" +
        "<details><summary>The plan</summary>\n\n### plan\n\n</details>\n",
    );
    expect(renderDrift({ stack: "prod", summary: "s", markdown: "m", issue: false }).startsWith("Live state of stack `prod` differs")).toBe(true);
    const long = renderDrift({ stack: "prod", summary: "s", markdown: "```diff\n" + "+ x\n".repeat(40_000), issue: true });
    expect(long.length).toBeLessThanOrEqual(65_536);
    expect(long).toContain("> The plan was cut; all of it is in the job summary of this run.");
    expect(long.match(/<details>/g)!.length).toBe(long.match(/<\/details>/g)!.length);
    expect(renderDriftResolved("prod", undefined)).toBe("Live state of stack `prod` matches the manifests again. Closing.\n");
  });
});
