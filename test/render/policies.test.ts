/**
 * Policies' results in every rendering of a plan: the counts line and each violation (never the passing checks),
 * kept whole when a comment must be cut, and in the JSON plan as the schema says.
 */
import { describe, expect, it } from "vitest";
import { compilePolicyExpression, type Policy } from "../../src/core/policies.js";
import type { PolicyLevel } from "../../src/model/plan.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import { renderActionPlan, renderJobSummary } from "../../src/render/action.js";
import { renderHtml } from "../../src/render/html.js";
import { renderJson } from "../../src/render/json.js";
import { renderMarkdown } from "../../src/render/markdown.js";
import { renderText } from "../../src/render/text.js";
import { desiredWb, hrId, plan } from "../core/builders.js";

function policy(name: string, level: PolicyLevel, expression: string): Policy {
  const compiled = compilePolicyExpression(expression, "change");
  if ("problem" in compiled) throw new Error(compiled.problem.message);
  return { name, description: `${name} <holds> & more.`, level, match: {}, program: compiled.program };
}

const wbs = Array.from({ length: 30 }, (_, i) => desiredWb(`wb-${String(i).padStart(2, "0")}`, { backends: { [hrId(1)]: 100 } }));
const policies = [
  policy("deny-b", "deny", "change.address != 'weighted_backend.wb-01'"),
  policy("warn-a", "warn", "change.address != 'weighted_backend.wb-00'"),
  policy("ok", "ack", "true"),
];
const p = plan({ wbs }, {}, { policies });

describe("policies in the renderings of a plan", () => {
  it("text: the counts, then each violation with its level's meaning", () => {
    const text = renderText(p, { color: false });
    expect(text.split("\n\n")[0]).toBe(
      [
        "Policies: 3 rules, 90 checks: 88 passed, 2 failed (deny 1, warn 1).",
        "  x deny-b (deny: the plan cannot be applied): weighted_backend.wb-01: deny-b <holds> & more.",
        "  x warn-a (warn: a warning): weighted_backend.wb-00: warn-a <holds> & more.",
      ].join("\n"),
    );
  });

  it("Markdown: a section that survives the cut of a comment, in the Action's comment and job summary", () => {
    const section = [
      "#### Policies",
      "",
      "Policies: 3 rules, 90 checks: 88 passed, 2 failed (deny 1, warn 1).",
      "",
      "- **`deny-b`** (deny: the plan cannot be applied) on `weighted_backend.wb-01`: deny-b &lt;holds&gt; &amp; more.",
      "- **`warn-a`** (warn: a warning) on `weighted_backend.wb-00`: warn-a &lt;holds&gt; &amp; more.",
    ].join("\n");
    expect(renderActionPlan(p)).toContain(section);
    const cut = renderMarkdown(p, { maxChars: 1500 });
    expect(cut).toContain(section);
    expect(cut.length).toBeLessThan(renderMarkdown(p).length);
    expect(renderJobSummary("t", renderActionPlan(p))).toContain(section);
  });

  it("HTML: a box with the counts and each violation, escaped", () => {
    const html = renderHtml(p);
    expect(html).toContain('<section class="box policies" aria-labelledby="policies">');
    expect(html).toContain("<p>Policies: 3 rules, 90 checks: 88 passed, 2 failed (deny 1, warn 1).</p>");
    expect(html).toContain("<li><strong>deny-b</strong> (deny: the plan cannot be applied) on <code>weighted_backend.wb-01</code>: deny-b &lt;holds&gt; &amp; more.</li>");
  });

  it("JSON: the results under policies, as the schema says; nothing when the project has no policy", () => {
    const json = JSON.parse(renderJson(p));
    expect(PlanSchema.parse(json).policies?.results.map((r) => [r.rule, r.level, r.address])).toEqual([
      ["deny-b", "deny", "weighted_backend.wb-01"],
      ["warn-a", "warn", "weighted_backend.wb-00"],
    ]);
    expect(Object.keys(json).indexOf("policies")).toBe(Object.keys(json).indexOf("risks") + 1);
    expect(JSON.parse(renderJson(plan({ wbs }, {})))).not.toHaveProperty("policies");
  });
});

describe("many violations", () => {
  const many = plan({ wbs }, {}, { policies: [policy("never", "ack", "false")] });

  it("Markdown lists 50 and counts the rest; the risk names 10 and counts the rest", () => {
    const md = renderMarkdown(many);
    expect(md.match(/^- \*\*`never`\*\* \(/gm)).toHaveLength(30);
    const lots = plan(
      { wbs: [...wbs, ...wbs.map((w) => ({ ...w, name: `${w.name}-b` }))] },
      {},
      { policies: [policy("never", "ack", "false"), policy("again", "warn", "false")] },
    );
    const cut = renderMarkdown(lots);
    expect(cut.match(/^- \*\*`(never|again)`\*\* \(/gm)).toHaveLength(50);
    expect(cut).toContain("- and 70 more (`edgeplan plan` lists them all)\n");
    expect(lots.risks[0]?.message).toMatch(/; weighted_backend\.wb-04-b: never <holds> & more; and 50 more\. Apply with --ack never if that is intended\.$/);
    expect(lots.risks[0]?.addresses).toHaveLength(60);
  });
});
