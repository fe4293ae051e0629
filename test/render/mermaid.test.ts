/**
 * The traffic diagrams of the Markdown plan: every diagram of every golden scenario, and diagrams of objects with
 * hostile names, parse with Mermaid itself (run in chromium: Mermaid's parser needs a DOM, and a real browser is the
 * one GitHub's readers use), and the hostile names come out as plain text in the drawing, never as markup.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Plan } from "../../src/model/plan.js";
import { renderMarkdown } from "../../src/render/markdown.js";
import { label, MAX_LABEL, renderMermaid, trafficChanges } from "../../src/render/mermaid.js";
import { desiredWb, hrId, liveWb, markerMetadata, plan, wbId } from "../core/builders.js";
import { startBrowser, type Browser } from "../helpers/browser.js";

// The callbacks given to page.evaluate run in the browser: these are the browser's names (the project's TypeScript
// settings have no DOM library, so that the server's code is checked against node's types alone).
// biome-ignore lint/suspicious/noExplicitAny: the DOM's types are not in the project's settings
declare const document: any;

const here = path.dirname(fileURLToPath(import.meta.url));
const scenariosDir = path.join(here, "..", "scenarios");
const MERMAID_JS = fileURLToPath(new URL("../../node_modules/mermaid/dist/mermaid.min.js", import.meta.url));

/** The ```mermaid blocks of a Markdown text. */
function mermaidBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```mermaid\n([\s\S]*?)\n```$/gm)].map((m) => m[1] as string);
}

/**
 * The info strings of the fenced code blocks of a Markdown text, read as CommonMark does: a line of three or more
 * backticks opens a block that only a line of at least as many backticks closes.
 */
function fences(markdown: string): string[] {
  const infos: string[] = [];
  let open = 0;
  for (const line of markdown.split("\n")) {
    const m = /^(`{3,})([^`]*)$/.exec(line);
    if (open === 0 && m) {
      open = (m[1] as string).length;
      infos.push((m[2] as string).trim());
    } else if (open > 0 && /^`+\s*$/.test(line) && line.trim().length >= open) {
      open = 0;
    }
  }
  expect(open, "every fence is closed").toBe(0);
  return infos;
}

const HOSTILE_NAMES = [
  'he said "hi"',
  "a]b[c",
  "x --> y",
  "```js\nalert(1)\n```",
  "`code` and ``double``",
  "<script>alert(1)</script>",
  '<img src=x onerror="alert(1)">',
  "a & b &amp; c",
  "#35; #quot; #lt;",
  '%%{init: {"theme":"dark"}}%%',
  "end",
  "click c0 call alert()",
  "pipe | and ; and {brace} (paren)",
  "line one\nline two",
  "🚀 ünïcödé ‮rtl",
  "x".repeat(300),
];

/** A plan whose diagrams carry hostile names: children named by their owner markers, and pruned orphans. */
function hostilePlan(): Plan {
  const n = HOSTILE_NAMES.length;
  const children = Object.fromEntries(HOSTILE_NAMES.map((_, i) => [wbId(i + 2), i % 3 === 0 ? 0 : 10 + i]));
  const live = [
    liveWb(1, { metadata: markerMetadata("default", "front"), backends: { [hrId(1)]: 100 } }),
    ...HOSTILE_NAMES.map((name, i) => liveWb(i + 2, { metadata: markerMetadata("default", name), backends: { [hrId(1)]: 100 } })),
    ...HOSTILE_NAMES.map((name, i) => liveWb(n + i + 2, { metadata: markerMetadata("default", `gone ${name}`), backends: { [hrId(1)]: 60, [hrId(2)]: 40 } })),
  ];
  return plan({ wbs: [desiredWb("front", { backends: children })] }, { wbs: live }, { prune: true });
}

describe("label", () => {
  it("writes every character outside letters, digits and a few signs as a Mermaid entity code, and cuts long names", () => {
    expect(label('a"b')).toBe("a#34;b");
    expect(label("x --> y")).toBe("x --#62; y");
    expect(label("`<&>#")).toBe("#96;#60;#38;#62;#35;");
    expect(label("x".repeat(300))).toBe(`${"x".repeat(MAX_LABEL - 1)}#8230;`);
    for (const name of HOSTILE_NAMES) expect(label(name)).toMatch(/^[A-Za-z0-9 _.,:/()%→#;-]*$/u);
  });
});

describe("traffic diagrams in the Markdown plan", () => {
  it("draws one diagram per weighted backend whose split moves, each in its own fence, hostile names included", () => {
    const p = hostilePlan();
    const md = renderMarkdown(p);
    const traffic = trafficChanges(p.changes);
    expect(traffic.length).toBe(HOSTILE_NAMES.length + 1);
    expect(mermaidBlocks(md)).toEqual(traffic.map((c) => renderMermaid(c).join("\n")));
    // Nothing a name holds reaches the comment as markup: outside code, no raw tag of a name; only the renderer's
    // own fences open code blocks (one per diagram and one per change's details).
    const outsideCode = md.replace(/^```[\s\S]*?^```$/gm, "").replace(/`[^`\n]*`/g, "");
    expect(outsideCode).not.toMatch(/<(script|img)/);
    expect(fences(md)).toEqual([...traffic.map(() => "mermaid"), ...p.changes.map(() => "diff")]);
  });

  it("drops the diagrams first, with a note, when the comment would pass its budget", () => {
    const p = hostilePlan();
    const full = renderMarkdown(p);
    const diagrams = mermaidBlocks(full).length;
    const cut = renderMarkdown(p, { maxChars: full.length - 200 });
    expect(mermaidBlocks(cut).length).toBeLessThan(diagrams);
    expect(cut).toContain(
      `of ${diagrams} traffic diagrams were cut to keep this comment under ${full.length - 200} characters; \`edgeplan plan --format html\` draws every split._`,
    );
    // Every change's details are still there: the diagrams went first.
    expect(cut.match(/<details>/g)?.length).toBe(p.changes.length);
    expect(cut.length).toBeLessThanOrEqual(full.length - 200);
  });
});

describe("every diagram parses with Mermaid (chromium)", () => {
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    browser = await startBrowser();
    page = await browser.page();
    await page.setContent("<!doctype html><html><body></body></html>");
    await page.addScriptTag({ path: MERMAID_JS });
    await page.evaluate(() => (globalThis as unknown as { mermaid: { initialize(c: object): void } }).mermaid.initialize({ startOnLoad: false }));
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Parses each diagram; resolves with the error of each one that fails (empty: all parse). */
  const parseAll = (diagrams: string[]): Promise<string[]> =>
    page.evaluate(async (list) => {
      const mermaid = (globalThis as unknown as { mermaid: { parse(text: string): Promise<unknown> } }).mermaid;
      const errors: string[] = [];
      for (const d of list) {
        try {
          await mermaid.parse(d);
        } catch (err) {
          errors.push(`${String(err)}\n${d}`);
        }
      }
      return errors;
    }, diagrams);

  it("parses the diagrams of every golden scenario", async () => {
    const diagrams = readdirSync(scenariosDir)
      .filter((d) => /^\d{3}-/.test(d))
      .flatMap((d) => {
        try {
          return mermaidBlocks(readFileSync(path.join(scenariosDir, d, "plan.md"), "utf8"));
        } catch {
          return [];
        }
      });
    expect(diagrams.length).toBeGreaterThanOrEqual(10);
    expect(await parseAll(diagrams)).toEqual([]);
  });

  it("parses the diagrams of hostile names and draws each name as text", async () => {
    const diagrams = mermaidBlocks(renderMarkdown(hostilePlan()));
    expect(await parseAll(diagrams)).toEqual([]);
    const drawn = await page.evaluate(async (list) => {
      const mermaid = (globalThis as unknown as { mermaid: { render(id: string, text: string): Promise<{ svg: string }> } }).mermaid;
      const out: Array<{ labels: string[]; markup: number }> = [];
      for (const [i, d] of list.entries()) {
        const { svg } = await mermaid.render(`d${i}`, d);
        const box = document.createElement("div");
        box.innerHTML = svg;
        const labels = [...box.querySelectorAll(".nodeLabel, .edgeLabel")].map((e) => e.textContent ?? "");
        out.push({ labels, markup: box.querySelectorAll("script, img, iframe, a, [onerror]").length });
      }
      return out;
    }, diagrams);
    const texts = drawn.flatMap((d) => d.labels);
    for (const name of HOSTILE_NAMES.filter((n) => !n.includes("\n"))) {
      const shown = [...name].length > MAX_LABEL ? `${[...name].slice(0, MAX_LABEL - 1).join("")}…` : name;
      expect(
        texts.some((t) => t.startsWith(shown)),
        `the label of ${JSON.stringify(name)}`,
      ).toBe(true);
    }
    expect(drawn.map((d) => d.markup)).toEqual(drawn.map(() => 0));
  });
});
