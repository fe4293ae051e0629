/**
 * The HTML plan in a real browser (chromium): what a person sees for a weights change, a SAML removal with its risk,
 * and a plan of 500 changes; opened from disk, loading nothing else, in light and dark schemes, readable at 360 px.
 * The page is also pure and deterministic (same plan, same bytes), which the golden scenarios hold byte for byte.
 *
 * `UPDATE_SCREENSHOT=1 npx vitest run test/render/html.test.ts` remakes docs/images/plan.png (the README shows it):
 * the plan of the examples after a canary promotion and a blue/green switch.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runApply } from "../../src/commands/apply.js";
import { captureIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import type { Plan } from "../../src/model/plan.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import { renderHtml } from "../../src/render/html.js";
import { desiredWb, hrId, liveWb, markerMetadata, plan } from "../core/builders.js";
import { startBrowser, type Browser } from "../helpers/browser.js";

// The callbacks given to page.evaluate run in the browser: these are the browser's names (the project's TypeScript
// settings have no DOM library, so that the server's code is checked against node's types alone).
// biome-ignore-start lint/suspicious/noExplicitAny: the DOM's types are not in the project's settings
declare const document: any;
declare const window: any;
declare function getComputedStyle(element: unknown): any;
// biome-ignore-end lint/suspicious/noExplicitAny: the DOM's types are not in the project's settings

const here = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.join(here, "..", "..");
const SCREENSHOT = path.join(REPO, "docs", "images", "plan.png");
const tmp = mkdtempSync(path.join(tmpdir(), "edgeplan-html-"));

/** The whole page of a golden scenario's plan (its plan.json), stylesheet and all, written to a file to open. */
function scenario(name: string): string {
  const saved = PlanSchema.parse(JSON.parse(readFileSync(path.join(here, "..", "scenarios", name, "plan.json"), "utf8")));
  const file = path.join(tmp, `${name}.html`);
  writeFileSync(file, renderHtml(saved));
  return file;
}

/** 250 creates and 250 pruned deletes, each with a split of two children. */
function bigPlan(): Plan {
  const names = Array.from({ length: 250 }, (_, i) => `new-${String(i).padStart(3, "0")}`);
  return plan(
    { wbs: names.map((n, i) => desiredWb(n, { backends: { [hrId(1)]: 100 + i, [hrId(2)]: 900 } })) },
    { wbs: names.map((n, i) => liveWb(i + 1, { metadata: markerMetadata("default", `old-${n}`), backends: { [hrId(1)]: 70, [hrId(2)]: 30 } })) },
    { prune: true },
  );
}

describe("the HTML plan in chromium", { timeout: 60_000 }, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Opens a page file at `width`, in a colour scheme; `others` collects every request but the page's own. */
  async function open(file: string, width = 1280, scheme: "light" | "dark" = "light"): Promise<{ page: Page; others: string[] }> {
    const page = await browser.page(width, 900);
    await page.emulateMedia({ colorScheme: scheme });
    const url = pathToFileURL(file).href;
    const others: string[] = [];
    page.on("request", (r) => {
      if (r.url() !== url) others.push(r.url());
    });
    await page.goto(url);
    return { page, others };
  }

  const text = (page: Page, selector: string): Promise<string[]> => page.locator(selector).allInnerTexts();
  const overflow = (page: Page): Promise<number> => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

  it("a weights change: the summary, the estimate, the card with the split before and after", async () => {
    const { page, others } = await open(scenario("006-update-weights"));
    expect(await page.title()).toBe("edgeplan plan: stack default");
    expect(await text(page, "h1")).toEqual(["edgeplan plan"]);
    expect(await text(page, ".summary")).toEqual(["Plan: 0 to create, 1 to update, 0 to delete."]);
    expect(await text(page, ".estimate")).toEqual(["apply will send 2 requests (1 write, 1 read to check convergence); at 120/60s and 4 at once, that is about 1 s."]);
    const card = page.locator("article.card");
    expect(await card.count()).toBe(1);
    expect(await card.locator("h3").innerText()).toContain("weighted_backend.checkout");
    expect(await card.locator("figcaption").innerText()).toBe("Traffic split");
    expect(await card.locator("svg.bar").evaluateAll((svgs) => svgs.map((s) => s.getAttribute("aria-label")))).toEqual([
      "before: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 90%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 10%",
      "after: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 80%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 20%",
    ]);
    // The bars are drawn: the first child's part is 90 % of the before bar's width and 80 % of the after bar's.
    const widths = await card
      .locator("svg.bar")
      .evaluateAll((svgs) => svgs.map((s) => s.querySelector("rect").getBoundingClientRect().width / s.getBoundingClientRect().width));
    expect(widths.map((w) => Math.round(w * 100))).toEqual([90, 80]);
    expect(await text(page, ".shares .share")).toEqual(["90% → 80%", "0%", "10% → 20%"]);
    expect(others).toEqual([]);
  });

  it("a rollout at its first, middle and last step: the bars show the weights now, this step's and the final ones", async () => {
    const bars = async (name: string): Promise<string[]> => {
      const { page, others } = await open(scenario(name));
      expect(others).toEqual([]);
      const rollout = await page.locator("article.card").innerText();
      expect(rollout).toContain("final: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 0 (0%), bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 10000 (100%)");
      return page.locator("article.card svg.bar").evaluateAll((svgs) => svgs.map((s) => s.getAttribute("aria-label")));
    };
    expect(await bars("039-rollout-first-step")).toEqual([
      "before: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 90%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 10%",
      "after: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 60%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 40%",
      "final: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 0%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 100%",
    ]);
    expect(await bars("044-rollout-middle-step")).toEqual([
      "before: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 60%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 40%",
      "after: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 30%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 70%",
      "final: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 0%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 100%",
    ]);
    // The last step writes the final weights: its after bar is the final one.
    expect(await bars("045-rollout-last-step")).toEqual([
      "before: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 30%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 70%",
      "after: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 0%, bkdhr_32ELHaQ2DXnHfUHAKb4eO6SeC8T 0%, bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 100%",
    ]);
    // A paused rollout says why and what a person runs to go on.
    const paused = (await open(scenario("046-rollout-paused"))).page;
    expect(await text(paused, "article.card .notes li")).toEqual([
      'paused: pause step 2 of 4; run "edgeplan rollout promote checkout" to go on',
      "rollout: step 2 of 4, steps at 10%, pause, 50%, 100% of the move, at least 5m apart; paused (pause step 2 of 4)",
      "check before this step: GET https://status.example.com/checkout/healthy (expect 200, timeout 10s)",
      "final: bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw 0 (0%), bkdhr_32ELHcuG1nDqyqu0VL0Yp9jBq4Z 10000 (100%) (the manifest's weights)",
    ]);
  });

  it("a SAML removal: the auth-removal risk first, then the module's card with what is removed", async () => {
    const { page, others } = await open(scenario("021-saml-delete"));
    const risks = page.locator("section.risks");
    expect(await risks.isVisible()).toBe(true);
    expect(await risks.locator("li").allInnerTexts()).toEqual([
      expect.stringMatching(/^auth-removal: edge_route\.\S+\.saml: the SAML module is deleted, so the route no longer asks for a login\./),
    ]);
    const [riskBox, card] = await Promise.all([risks.boundingBox(), page.locator("article.card").boundingBox()]);
    expect(riskBox!.y).toBeLessThan(card!.y);
    expect(await page.locator("article.card p").first().innerText()).toMatch(/^will be deleted/);
    expect(await text(page, "article.card .diffs li code")).toContain("idp_metadata");
    // The risk box stands out: its left border has the risk colour.
    expect(await risks.evaluate((e) => getComputedStyle(e).borderLeftColor)).toBe("rgb(207, 34, 46)");
    expect(others).toEqual([]);
  });

  it("a targeted plan says so above its summary; differences ignore_changes leaves are listed", async () => {
    const targeted = await open(scenario("033-target-prune"));
    expect(await text(targeted.page, "header .targeted")).toEqual([
      'Targeted plan (only weighted_backend.old-*): the rest of stack "default" is not planned and may still differ from the manifests.',
    ]);
    const ignored = await open(scenario("035-ignore-description-changed-by-hand"));
    expect(await text(ignored.page, "#ignored")).toEqual(["Ignored (ignore_changes): these fields differ and are left as they are live"]);
    expect(await text(ignored.page, "section[aria-labelledby=ignored] li")).toEqual([expect.stringMatching(/^weighted_backend\.\S+: ignored: description differs$/)]);
  });

  it("the SAML modules the plan creates, whose values the apply shows; nothing for those unchanged", async () => {
    const created = (await open(scenario("019-saml-create"))).page;
    expect(await text(created, "#outputs")).toEqual(["Outputs"]);
    expect(await text(created, "section[aria-labelledby=outputs] p")).toEqual([
      "IdP values of these SAML modules, known after apply (the apply shows them, to copy into the IdP):",
    ]);
    expect(await text(created, "section[aria-labelledby=outputs] li")).toEqual(["edge_route.edghts_2G4e8ay6UX87bXwr8GXBHKATNk6/edghtsrt_32ELHwJPhCQPmmUX0L0b2M0hXZw.saml"]);
    expect(await text(created, "section[aria-labelledby=outputs] dd")).toEqual([]);
    const replaced = (await open(scenario("020-saml-replace-idp-metadata"))).page;
    expect(await text(replaced, "#outputs")).toEqual([]);
  });

  it("a plan of 500 changes: every card, the mass-delete risk, and nothing wider than 360 px", async () => {
    const big = bigPlan();
    expect(big.changes.length).toBe(500);
    const file = path.join(tmp, "big.html");
    writeFileSync(file, renderHtml(big));
    expect(renderHtml(big)).toBe(readFileSync(file, "utf8")); // same plan, same bytes
    const { page, others } = await open(file, 360);
    expect(await page.locator("article.card").count()).toBe(500);
    expect(await text(page, ".summary")).toEqual(["Plan: 250 to create, 0 to update, 250 to delete."]);
    expect(await text(page, "h2#changes")).toEqual(["Changes (500)"]);
    expect((await text(page, "section.risks li"))[0]).toMatch(/^mass-delete: The plan deletes 250 objects/);
    expect(await page.locator("svg.bar").count()).toBe(500); // one bar per side that exists
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    expect(others).toEqual([]);
  });

  it("is readable at 360 px wide, in light and dark schemes", async () => {
    for (const name of ["006-update-weights", "021-saml-delete", "030-mixed", "020-saml-replace-idp-metadata"]) {
      const light = await open(scenario(name), 360, "light");
      expect(await overflow(light.page), `${name} fits 360 px`).toBeLessThanOrEqual(0);
      const font = await light.page.evaluate(() => parseFloat(getComputedStyle(document.body).fontSize));
      expect(font).toBeGreaterThanOrEqual(14);
      const colours = async (p: Page): Promise<string[]> => p.evaluate(() => [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]);
      expect(await colours(light.page)).toEqual(["rgb(255, 255, 255)", "rgb(31, 35, 40)"]);
      const dark = await open(scenario(name), 360, "dark");
      expect(await colours(dark.page)).toEqual(["rgb(13, 17, 23)", "rgb(230, 237, 243)"]);
    }
  });

  it("the apply report: one page with the headline, the convergence, each result, the outputs, then the plan", async () => {
    const dir = path.join(tmp, "report");
    cpSync(path.join(REPO, "examples", "saml"), path.join(dir, "saml"), { recursive: true });
    cpSync(path.join(REPO, "examples", "canary"), path.join(dir, "canary"), { recursive: true });
    const io = captureIO({ EDGEPLAN_LOCAL_DIR: path.join(dir, "state") }, dir);
    const result = await runApply({ paths: ["."], local: true, autoApprove: true, format: "html" }, io);
    expect(result.exitCode).toBe(0);
    expect(io.out.startsWith("<!doctype html>\n")).toBe(true);
    expect(io.out.match(/<!doctype html>/g)?.length).toBe(1);
    expect(io.err).toContain("Plan: 5 to create (1 weighted backend, 3 modules, 1 inventory record), 0 to update, 0 to delete."); // the plan asked about
    const file = path.join(dir, "report.html");
    writeFileSync(file, io.out);
    const { page, others } = await open(file, 360);
    expect(await text(page, "h1")).toEqual(["edgeplan apply"]);
    expect(await text(page, ".summary")).toEqual([
      "Apply complete: 5 done.",
      "Plan: 5 to create (1 weighted backend, 3 modules, 1 inventory record), 0 to update, 0 to delete.",
    ]);
    expect(await text(page, "header p.add")).toEqual(["Converged: the live state matches the manifests."]);
    expect(await page.locator("section[aria-labelledby=results] tbody tr").count()).toBe(5);
    expect(await text(page, "section[aria-labelledby=results] tbody td:nth-child(2)")).toEqual(["done", "done", "done", "done", "done"]);
    // The outputs are the values the server made: no "known after apply" left.
    expect((await text(page, "section[aria-labelledby=outputs] dd")).filter((v) => v.includes("known after apply"))).toEqual([]);
    // A card per change: the inventory write that records the three modules is one.
    expect(await page.locator("article.card").count()).toBe(5);
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    expect(others).toEqual([]);
  });

  it("docs/images/plan.png shows the example plan (UPDATE_SCREENSHOT=1 remakes it)", async () => {
    if (process.env.UPDATE_SCREENSHOT === "1") {
      const page = await examplePlanPage();
      await page.screenshot({ path: SCREENSHOT, clip: { x: 0, y: 0, width: 900, height: 1000 } });
    }
    expect(existsSync(SCREENSHOT)).toBe(true);
    const png = readFileSync(SCREENSHOT);
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([900, 1000]);
    expect(readFileSync(path.join(REPO, "README.md"), "utf8")).toContain("![The HTML plan of the examples](docs/images/plan.png)");
  });

  /** The examples applied on a local server, then the canary promoted halfway and blue/green switched: the plan's page. */
  async function examplePlanPage(): Promise<Page> {
    const dir = path.join(tmp, "examples");
    cpSync(path.join(REPO, "examples"), dir, { recursive: true });
    const io = captureIO({ EDGEPLAN_LOCAL_DIR: path.join(tmp, "state") }, tmp);
    const common = { paths: ["examples"], local: true };
    expect((await runApply({ ...common, autoApprove: true, force: true, quiet: true }, io)).exitCode).toBe(0);
    const edit = (file: string, from: string, to: string): void => {
      const target = path.join(dir, file);
      writeFileSync(target, readFileSync(target, "utf8").replace(from, to));
    };
    edit("canary/checkout.yaml", "HO5iR: 9000", "HO5iR: 5000");
    edit("canary/checkout.yaml", "26sfMq: 1000", "26sfMq: 5000");
    edit("blue-green/storefront.yaml", "storefront-blue: 10000\n  storefront-green: 0", "storefront-blue: 0\n  storefront-green: 10000");
    const shown = captureIO({ EDGEPLAN_LOCAL_DIR: path.join(tmp, "state") }, tmp);
    await runPlan({ ...common, format: "html", rateLimit: "120/60s" }, shown);
    const file = path.join(tmp, "example.html");
    writeFileSync(file, shown.out);
    const page = (await open(file, 900)).page;
    await page.setViewportSize({ width: 900, height: 1000 });
    return page;
  }
});
