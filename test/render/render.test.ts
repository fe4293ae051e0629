import { describe, expect, it } from "vitest";
import { z } from "zod";
import { renderJson } from "../../src/render/json.js";
import { renderHtml } from "../../src/render/html.js";
import { renderMarkdown } from "../../src/render/markdown.js";
import { renderText } from "../../src/render/text.js";
import { PlanFileSchema, PlanSchema } from "../../src/model/plan-schema.js";
import type { Plan } from "../../src/model/plan.js";
import {
  desiredRoute,
  inventoryMetadata,
  desiredWb,
  EDGE,
  hrId,
  liveRouteOf,
  liveWb,
  markerMetadata,
  plan,
  present,
  ROUTE,
  samlModule,
  samlSettings,
  unmanaged,
  wbId,
} from "../core/builders.js";

const ESC = "\x1b[";

function bigPlan(n: number): Plan {
  return plan(
    {},
    {
      wbs: Array.from({ length: n }, (_, i) =>
        liveWb(i + 1, { description: `object ${i} ${"x".repeat(200)}`, metadata: markerMetadata("default", `o${String(i).padStart(3, "0")}`) }),
      ),
    },
    { prune: true },
  );
}

describe("renderText", () => {
  const p = plan(
    { wbs: [desiredWb("a", { backends: { [hrId(1)]: 50, [hrId(2)]: 50, [hrId(3)]: 0 } })] },
    { wbs: [liveWb(1, { metadata: markerMetadata("default", "a"), backends: { [hrId(1)]: 100, [hrId(2)]: 0, [hrId(3)]: 0 } })] },
  );

  it("draws weights as before -> after with shares and counts the unchanged children (a 50-point move is not over --max-shift 50)", () => {
    expect(renderText(p, { color: false })).toBe(
      [
        'edgeplan will make these changes (stack "default"); symbols:',
        "  ~  update in place",
        "",
        "  # weighted_backend.a will be updated in place (manifests/main.yaml:1:1)",
        `  ~ weighted_backend.a (${wbId(1)})`,
        "      ~ backends:",
        `          ~ ${hrId(1)}: 100 (100%) -> 50 (50%)`,
        `          ~ ${hrId(2)}: 0 (0%) -> 50 (50%)`,
        "          # (1 unchanged child hidden)",
        "",
        "Plan: 0 to create, 1 to update, 0 to delete.",
        "Estimate: apply will send 2 requests (1 write, 1 read to check convergence); at 120/60s and 4 at once, that is about 1 s.",
        "",
      ].join("\n"),
    );
  });

  it("shows a child whose weight stays but whose share moves, without a change marker", () => {
    const q = plan(
      { wbs: [desiredWb("a", { backends: { [hrId(1)]: 50, [hrId(2)]: 150 } })] },
      { wbs: [liveWb(1, { metadata: markerMetadata("default", "a"), backends: { [hrId(1)]: 50, [hrId(2)]: 50 } })] },
    );
    const text = renderText(q, { color: false });
    expect(text).toContain(`\n            ${hrId(1)}: 50 (50%) -> 50 (25%)\n`);
    expect(text).toContain(`\n          ~ ${hrId(2)}: 50 (50%) -> 150 (75%)\n`);
  });

  it("uses ANSI colour only when asked", () => {
    expect(renderText(p, { color: false })).not.toContain(ESC);
    const coloured = renderText(p, { color: true });
    expect(coloured).toContain(`${ESC}33m~${ESC}0m weighted_backend.a`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: an ANSI colour code starts with ESC
    expect(coloured.replace(/\x1b\[[0-9;]*m/g, "")).toBe(renderText(p, { color: false }));
  });

  it("says there is nothing to change but for the orphans it keeps, and leaves out the IdP values the IdP holds", () => {
    const q = plan(
      { routes: [desiredRoute(present(samlSettings()), unmanaged)] },
      {
        // The stack's inventory records the SAML module it manages, as after any apply.
        wbs: [liveWb(1, { metadata: markerMetadata("default", "left") }), liveWb(2, { metadata: inventoryMetadata("default", [`edge_route.${EDGE}/${ROUTE}.saml`]) })],
        routes: [liveRouteOf(samlModule(ROUTE), null)],
      },
    );
    expect(renderText(q, { color: true })).toBe(
      [
        'No changes to the objects of the manifests; 1 orphan of stack "default" that no manifest names is kept (--prune deletes it).',
        "",
        'Orphans: objects of stack "default" that no manifest names:',
        `    weighted_backend.left (${wbId(1)}): no manifest names it; run with --prune to delete it`,
        "",
      ].join("\n"),
    );
    expect(renderMarkdown(q)).toContain('**No changes to the objects of the manifests; 1 orphan of stack "default" that no manifest names is kept (--prune deletes it).**');
    expect(renderHtml(q)).toContain(
      '<p class="summary">No changes to the objects of the manifests; 1 orphan of stack &quot;default&quot; that no manifest names is kept (--prune deletes it).</p>',
    );
    expect(JSON.parse(renderJson(q)).outputs).toHaveLength(1);
  });

  it("says No changes when the live state matches the manifests", () => {
    const q = plan({ routes: [] }, { wbs: [] });
    expect(renderText(q, { color: false })).toBe("No changes. Live state matches the manifests.\n");
  });
});

describe("renderMarkdown", () => {
  it("keeps the comment under maxChars by cutting details from the end, never the summary or the risks", () => {
    const p = bigPlan(12);
    const full = renderMarkdown(p);
    expect(full).toContain("<details>");
    expect(full).not.toContain("were cut");
    const cut = renderMarkdown(p, { maxChars: 6000 });
    expect(cut.length).toBeLessThanOrEqual(6000);
    expect(cut).toContain("**Plan: 0 to create, 0 to update, 12 to delete.**");
    expect(cut).toContain("- **`mass-delete`**: The plan deletes 12 objects, more than --max-deletes 10.");
    for (let i = 0; i < 12; i++) expect(cut).toContain(`| \`-\` | \`weighted_backend.o${String(i).padStart(3, "0")} (${wbId(i + 1)})\` | will be deleted |  |`);
    const shown = (cut.match(/<details>/g) ?? []).length;
    expect(shown).toBeGreaterThan(0);
    expect(shown).toBeLessThan(12);
    expect(cut).toContain(
      `_The last ${12 - shown} of 12 change details were cut to keep this comment under 6000 characters; the JSON plan (\`edgeplan plan --format json\`) has all of them._`,
    );
    // The traffic diagrams went first, and the details kept are the first ones, whole.
    expect(full).toContain("#### Traffic");
    expect(cut).toContain("_All 12 of 12 traffic diagrams were cut to keep this comment under 6000 characters; `edgeplan plan --format html` draws every split._");
    expect(cut).not.toContain("```mermaid");
    const blocks = (md: string): string[] => md.match(/<details>[\s\S]*?<\/details>/g) ?? [];
    expect(blocks(cut)).toEqual(blocks(full).slice(0, shown));
  });

  it("cuts table rows too when the table alone is too long, and says so", () => {
    const p = bigPlan(400);
    const md = renderMarkdown(p);
    expect(md.length).toBeLessThanOrEqual(60_000);
    const shortened = renderMarkdown(p, { maxChars: 5000 });
    expect(shortened.length).toBeLessThanOrEqual(5000);
    const rows = (shortened.match(/^\| `-` \|/gm) ?? []).length;
    expect(rows).toBeGreaterThan(10);
    expect(shortened).toContain(`_The last ${400 - rows} of 400 changes were cut to keep this comment under 5000 characters;`);
    expect(shortened).toContain("_All 400 of 400 change details were cut");
    expect(shortened).toContain("_All 400 of 400 orphans were cut");
  });

  it("keeps the summary and the risks even when they alone are longer than maxChars", () => {
    const tiny = renderMarkdown(bigPlan(12), { maxChars: 100 });
    expect(tiny).toContain("**Plan: 0 to create, 0 to update, 12 to delete.**");
    expect(tiny).toContain("- **`mass-delete`**");
    expect(tiny).not.toContain("#### Changes");
    expect(tiny).toContain("_All 12 of 12 changes were cut");
  });

  it("escapes what a manifest controls: backticks cannot close the fence, HTML and pipes stay text", () => {
    const p = plan({ wbs: [desiredWb("a", { description: "``` <img src=x onerror=alert(1)> | `x`" })], routes: [] }, {});
    const md = renderMarkdown(p);
    expect(md).toContain('\n````diff\n# manifests/main.yaml:1:1\n+ description: "``` <img src=x onerror=alert(1)> | `x`"\n');
    expect(md).toContain("\n````\n\n</details>\n");
    const multi = renderMarkdown(plan({ wbs: [desiredWb("a", { description: "```\nline two" })] }, {}));
    expect(multi).toContain("````diff\n# manifests/main.yaml:1:1\n+ description:\n+     ```\n+     line two\n");
  });

  it("says there is nothing to do", () => {
    expect(renderMarkdown(plan({}, {}))).toBe("### edgeplan plan: stack `default`\n\n**No changes. Live state matches the manifests.**\n");
  });
});

describe("renderJson", () => {
  const p = plan(
    { wbs: [desiredWb("b", { backends: { a: 1, [hrId(1)]: 2 } }), desiredWb("a")], routes: [desiredRoute(present(samlSettings()), unmanaged)] },
    { routes: [liveRouteOf(null, null)] },
  );

  it("is format_version 1, valid against its schema, with keys in schema order and a final newline", () => {
    const text = renderJson(p);
    expect(text.endsWith("}\n")).toBe(true);
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(parsed.format_version).toBe(1);
    expect(Object.keys(parsed)).toEqual([
      "format_version",
      "stack",
      "environment",
      "targeted",
      "options",
      "summary",
      "risks",
      "changes",
      "orphans",
      "outputs",
      "warnings",
      "ignored",
      "estimate",
    ]);
    expect(PlanFileSchema.safeParse(parsed).success).toBe(true);
    expect(parsed).toEqual(JSON.parse(JSON.stringify(p)));
  });

  it("gives the same bytes for a plan read back from its file", () => {
    const text = renderJson(p);
    expect(renderJson(PlanSchema.parse(JSON.parse(text)))).toBe(text);
  });

  it("refuses a plan that does not match its schema (a bug, never silently dropped)", () => {
    const broken = { ...p, format_version: 2 } as unknown as Plan;
    expect(() => renderJson(broken)).toThrow(/the plan does not match its JSON schema/);
  });

  it("has a JSON Schema that tools can read", () => {
    const schema = z.toJSONSchema(PlanFileSchema, { target: "draft-7", io: "input" }) as { title?: string; required?: string[] };
    expect(schema.title).toBe("edgeplan plan");
    expect(schema.required).toContain("changes");
  });
});
