/**
 * The plan as one self-contained HTML page (`plan --format html`, `--html FILE`): the summary and the request
 * estimate (after the notice of a targeted plan), risks first, then each change as a card (its traffic split drawn as
 * before/after bars in inline SVG, its field diffs and notes), the orphans, the differences `ignore_changes` leaves,
 * and the SAML values to copy into the IdP. The sections are exported for the apply report's page. Reads the Plan
 * only; same plan, same bytes. Pure.
 */
import { completeCommands } from "../core/command-text.js";
import type { Change, FieldDiff, Plan, WeightChange, WeightedBackendChange } from "../model/plan.js";
import {
  changeWarnings,
  DRIFT_HEADING,
  driftLine,
  estimateLine,
  IGNORED_HEADING,
  ignoredOfUnchanged,
  noChangesLine,
  OUTPUT_FIELDS,
  outputText,
  ownershipText,
  orphanId,
  phraseOf,
  PENDING_OUTPUTS,
  planOutputs,
  rolloutLines,
  summaryLine,
  symbolOf,
  targetedLine,
  valueText,
  type ChangeSymbol,
  type ShownOutputs,
  policiesLine,
  policyPlace,
  POLICY_LEVEL_NOTE,
} from "./common.js";
import { esc, renderHtmlPage, SPLIT_COLOURS } from "./html-page.js";
import { childName, childTag, finalShare, shareMove, trafficChanges } from "./mermaid.js";

/** Where and when a plan was made, as the command that renders it knows: the page's header shows both. */
export interface HtmlPlanPlace {
  /** The API the plan read (`local:<file>` for `--local`). */
  api_url: string;
  /** When the plan was made, ISO 8601. */
  at: string;
}

/**
 * Renders the plan as a whole HTML page, ending with a newline. The header names the stack, the API (the
 * environment's, `place`'s, or a saved plan's) and, with `place`, the time: a page read later says what it was made
 * against, with or without environments. `where` (the run's flags that reach the same API and stack) completes the
 * commands the notes quote.
 */
export function renderHtml(plan: Plan, place?: HtmlPlanPlace, where = ""): string {
  const api = plan.environment?.api_url ?? place?.api_url ?? plan.api?.url;
  const made = [
    ...(plan.environment ? [`environment <code>${esc(plan.environment.name)}</code>`] : []),
    ...(api === undefined ? [] : [`API <code>${esc(api)}</code>`]),
    `stack <code>${esc(plan.stack)}</code>`,
    ...(place ? [`planned at <time datetime="${esc(place.at)}">${esc(place.at)}</time>`] : []),
  ];
  const body = [
    "<header>",
    `<h1>edgeplan plan</h1>`,
    `<p class="muted${plan.environment ? " environment" : ""}">${made.join(", ")}</p>`,
    ...renderHtmlSummary(plan),
    "</header>",
    ...renderHtmlDrift(plan),
    ...renderHtmlRisks(plan),
    ...renderHtmlChanges(plan, "Changes", where),
    ...renderHtmlOrphans(plan),
    ...renderHtmlIgnored(plan),
    ...renderHtmlPendingOutputs(planOutputs(plan)),
  ];
  return renderHtmlPage(plan.environment ? `edgeplan plan: ${plan.environment.name}, stack ${plan.stack}` : `edgeplan plan: stack ${plan.stack}`, body);
}

/** The targeted-plan notice, the summary line, the estimate, and the count of each kind of change. */
export function renderHtmlSummary(plan: Plan): string[] {
  const targeted = targetedLine(plan);
  const notice = targeted === null ? [] : [`<p class="box warn targeted"><strong>${esc(targeted)}</strong></p>`];
  if (plan.changes.length === 0) return [...notice, `<p class="summary">${esc(noChangesLine(plan))}</p>`];
  const traffic = trafficChanges(plan.changes).length;
  return [
    ...notice,
    `<p class="summary">${esc(summaryLine(plan))}</p>`,
    `<p class="estimate">${esc(estimateLine(plan.estimate))}</p>`,
    `<ul class="counts"><li>${plan.changes.length} ${plan.changes.length === 1 ? "change" : "changes"}</li>` +
      `<li>${plan.risks.length} ${plan.risks.length === 1 ? "risk" : "risks"}</li>` +
      `<li>${traffic} traffic ${traffic === 1 ? "split" : "splits"} moved</li>` +
      `<li>${plan.orphans.length} ${plan.orphans.length === 1 ? "orphan" : "orphans"}</li></ul>`,
  ];
}

/** The policies' line and each failed policy, in a box (the risks' colour when a deny or ack failed, else the warnings'); nothing without policies. */
function renderHtmlPolicies(plan: Plan): string[] {
  if (!plan.policies) return [];
  const { results } = plan.policies;
  const box = results.some((r) => r.level !== "warn") ? "box" : "box warn";
  const out = [`<section class="${box} policies" aria-labelledby="policies">`, '<h2 id="policies">Policies</h2>', `<p>${esc(policiesLine(plan.policies))}</p>`];
  if (results.length > 0) {
    out.push("<ul>");
    for (const r of results) {
      const note = `${r.level}: ${POLICY_LEVEL_NOTE[r.level]}${r.level === "ack" ? ` ${r.rule}` : ""}`;
      out.push(`<li><strong>${esc(r.rule)}</strong> (${esc(note)}) on <code>${esc(policyPlace(r))}</code>: ${esc(r.message)}</li>`);
    }
    out.push("</ul>");
  }
  out.push("</section>");
  return out;
}

/** What changed outside edgeplan, each object with the fields that differ, in a box before the plan; nothing without drift. */
function renderHtmlDrift(plan: Plan): string[] {
  if (!plan.drift || plan.drift.length === 0) return [];
  const out = ['<section class="box warn drift" aria-labelledby="drift">', `<h2 id="drift">${esc(DRIFT_HEADING)}</h2>`, "<ul>"];
  for (const d of plan.drift) {
    const diffs = d.diffs.length > 0 ? `<ul class="diffs">${d.diffs.map(renderDiff).join("")}</ul>` : "";
    out.push(`<li>${esc(driftLine(d))}${diffs}</li>`);
  }
  out.push("</ul>", "</section>");
  return out;
}

/** Risks (each with the flag that acknowledges it), the policies, and warnings, in boxes at the top. */
export function renderHtmlRisks(plan: Plan): string[] {
  const out: string[] = [];
  if (plan.risks.length > 0) {
    out.push('<section class="box risks" aria-labelledby="risks">', '<h2 id="risks">Risks</h2>');
    out.push("<p>Apply needs <code>--ack RULE</code> for each rule below (or <code>--force</code>).</p>", "<ul>");
    for (const r of plan.risks) out.push(`<li><strong>${esc(r.rule)}</strong>: ${esc(r.message)}</li>`);
    out.push("</ul>", "</section>");
  }
  out.push(...renderHtmlPolicies(plan));
  if (plan.warnings.length > 0) {
    out.push('<section class="box warn" aria-labelledby="warnings">', '<h2 id="warnings">Warnings</h2>', "<ul>");
    for (const w of plan.warnings) out.push(`<li>${esc(w)}</li>`);
    out.push("</ul>", "</section>");
  }
  return out;
}

/** Every change as a card, under a heading; `where` completes the commands the notes quote. */
export function renderHtmlChanges(plan: Pick<Plan, "changes">, heading: string, where = ""): string[] {
  if (plan.changes.length === 0) return [];
  const cards = plan.changes.map((c, i) => renderCard(c, i, where));
  return [`<section aria-labelledby="changes">`, `<h2 id="changes">${esc(heading)} (${plan.changes.length})</h2>`, ...cards, "</section>"];
}

const SYMBOL_CLASS: Record<ChangeSymbol, string> = { "+": "a-create", "~": "a-update", "-": "a-delete", ">": "a-own", "!": "a-own", "=>": "a-own", ">>": "a-update" };

function renderCard(change: Change, index: number, where: string): string {
  const symbol = symbolOf(change);
  const out = [
    `<article class="card" id="change-${index + 1}">`,
    `<h3><span class="sym ${SYMBOL_CLASS[symbol]}" aria-hidden="true">${esc(symbol)}</span><code>${esc(change.address)}</code></h3>`,
    `<p>${esc(phraseOf(change))}${change.kind === "weighted_backend" && change.id ? ` · id <code>${esc(change.id)}</code>` : ""}` +
      `${change.source ? ` · <code>${esc(change.source)}</code>` : ""}</p>`,
  ];
  // A rollout says where it stands as the text plan does: its step, its check, its final weights, what comes next.
  const notes = [...change.notes, ...rolloutLines(change), ...(change.depends_on.length > 0 ? [`after ${change.depends_on.join(", ")}`] : [])];
  if (notes.length > 0) out.push('<ul class="notes muted">', ...notes.map((n) => `<li>${esc(completeCommands(n, where))}</li>`), "</ul>");
  for (const w of changeWarnings(change)) out.push(`<p class="box warn">warning: ${esc(w)}</p>`);
  if (change.kind === "weighted_backend" && change.weights.length > 0) out.push(...renderSplit(change));
  const diffItem = change.kind === "inventory" ? (d: FieldDiff) => `<li><code>${esc(d.path)}</code> ${esc(ownershipText(d))}</li>` : renderDiff;
  if (change.diffs.length > 0) out.push('<ul class="diffs">', ...change.diffs.map(diffItem), "</ul>");
  out.push("</article>");
  return out.join("\n");
}

/** The traffic split before and after as two bars, and each child's share as a list under them. */
function renderSplit(change: WeightedBackendChange): string[] {
  const before = change.action === "create" ? null : change.weights.map((w) => w.share_before);
  const after = change.action === "delete" ? null : change.weights.map((w) => w.share_after);
  const out = ['<figure class="split">', `<figcaption class="muted">Traffic split</figcaption>`];
  out.push(barRow("before", before, change.weights), barRow("after", after, change.weights));
  const final = change.weights.map((w) => finalShare(change, w.child));
  if (final.some((s) => s !== null)) out.push(barRow("final", final, change.weights));
  out.push('<ul class="shares">');
  change.weights.forEach((w, i) => {
    const moved = childTag(w, change.action);
    const tag = moved ? ` <span class="tag ${moved === "added" ? "add" : "del"}">${moved}</span>` : "";
    const id = w.name !== null && !w.known_after_apply ? ` <code>${esc(w.child)}</code>` : "";
    const weights = `${w.before ?? "–"} → ${w.after ?? "–"}`;
    out.push(
      `<li><span class="swatch s${i % SPLIT_COLOURS}"></span><span>${esc(childName(w))}</span>${id}${tag}` +
        `<span class="muted">weight ${esc(weights)}</span><span class="share">${esc(shareMove(w, change))}</span></li>`,
    );
  });
  out.push("</ul>", "</figure>");
  return out;
}

/** One bar: a rectangle per child as wide as its share; `null` when the object does not exist on that side. */
function barRow(side: string, shares: Array<number | null> | null, weights: WeightChange[]): string {
  const head = `<div class="bar-row"><span class="muted">${side}</span>`;
  if (shares === null) return `${head}<span class="muted">${side === "before" ? "does not exist yet" : "deleted"}</span></div>`;
  const described = weights.map((w, i) => `${childName(w)} ${shares[i] ?? 0}%`).join(", ");
  if (shares.every((s) => !s)) return `${head}<span class="muted">no traffic (every weight is 0)</span></div>`;
  let x = 0;
  const rects: string[] = [];
  shares.forEach((share, i) => {
    if (!share) return;
    const width = Math.round(share * 10);
    rects.push(
      `<rect class="s${i % SPLIT_COLOURS}" x="${x}" y="0" width="${width}" height="22"><title>${esc(`${childName(weights[i] as WeightChange)}: ${share}%`)}</title></rect>`,
    );
    x += width;
  });
  return `${head}<svg class="bar" viewBox="0 0 1000 22" preserveAspectRatio="none" role="img" aria-label="${esc(`${side}: ${described}`)}">${rects.join("")}</svg></div>`;
}

function renderDiff(diff: FieldDiff): string {
  const head = `<code>${esc(diff.path)}</code> `;
  if (diff.lines !== null) {
    const lines = diff.lines.map((l) => {
      const cls = l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "";
      return cls ? `<span class="${cls}">${esc(l)}</span>` : esc(l);
    });
    return `<li>${head}<span class="muted">${diff.op === "add" ? "added" : diff.op === "remove" ? "removed" : "changed"}</span><pre>${lines.join("\n")}</pre></li>`;
  }
  if (diff.op === "add") return `<li>${head}<span class="add">+ ${esc(valueText(diff.after))}</span></li>`;
  if (diff.op === "remove") return `<li>${head}<span class="del">- ${esc(valueText(diff.before))}</span></li>`;
  return `<li>${head}<span class="del">${esc(valueText(diff.before))}</span> → <span class="add">${esc(valueText(diff.after))}</span></li>`;
}

/** Objects of the stack that no manifest names, with what the plan does with each. */
export function renderHtmlOrphans(plan: Pick<Plan, "orphans" | "stack">): string[] {
  if (plan.orphans.length === 0) return [];
  const out = ['<section aria-labelledby="orphans">', `<h2 id="orphans">Orphans of stack <code>${esc(plan.stack)}</code></h2>`, "<ul>"];
  for (const o of plan.orphans) {
    const what = o.action === "delete" ? '<strong class="del">deleted</strong>' : "kept";
    const id = orphanId(o);
    out.push(`<li><code>${esc(o.address)}</code>${id === null ? "" : ` <code>${esc(id)}</code>`}: ${what}. ${esc(o.reason)}</li>`);
  }
  out.push("</ul>", "</section>");
  return out;
}

/** Fields that differ and that `ignore_changes` leaves as they are live, of objects the plan does not change. */
export function renderHtmlIgnored(plan: Plan): string[] {
  const ignored = ignoredOfUnchanged(plan);
  if (ignored.length === 0) return [];
  const out = ['<section aria-labelledby="ignored">', `<h2 id="ignored">${esc(IGNORED_HEADING)}</h2>`, "<ul>"];
  for (const i of ignored) out.push(`<li><code>${esc(i.address)}</code>: ignored: <code>${esc(i.path)}</code> differs</li>`);
  out.push("</ul>", "</section>");
  return out;
}

/** The SAML modules of a plan whose IdP values are known after apply, by address. */
function renderHtmlPendingOutputs({ shown }: ShownOutputs): string[] {
  if (shown.length === 0) return [];
  return [
    '<section aria-labelledby="outputs">',
    '<h2 id="outputs">Outputs</h2>',
    `<p>${esc(PENDING_OUTPUTS)}</p>`,
    "<ul>",
    ...shown.map((o) => `<li><code>${esc(o.address)}</code></li>`),
    "</ul>",
    "</section>",
  ];
}

/** The SAML values a person copies into the IdP, when the IdP does not hold them yet. */
export function renderHtmlOutputs({ shown }: ShownOutputs): string[] {
  if (shown.length === 0) return [];
  const out = ['<section aria-labelledby="outputs">', '<h2 id="outputs">Outputs: copy these into the IdP</h2>'];
  for (const o of shown) {
    out.push(`<div class="card"><h3><code>${esc(o.address)}</code></h3>`, "<dl>");
    for (const [field, label] of OUTPUT_FIELDS) {
      const value = o[field];
      out.push(
        `<dt>${esc(label)}</dt><dd>${value === null ? `<span class="muted">${esc(outputText(null, o.known_after_apply))}</span>` : `<code>${esc(value)}</code>`}</dd>`,
      );
    }
    out.push("</dl>", "</div>");
  }
  out.push("</section>");
  return out;
}
