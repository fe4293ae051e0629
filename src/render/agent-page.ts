/**
 * The agent's status page (docs/agent.md): every stack in one table, and a page per stack with its conditions, drift,
 * what waits (with the command that acknowledges it) and its history with each plan. Server-rendered HTML in the
 * shell every edgeplan page uses (no script, nothing loaded from elsewhere); every text from a status or a commit is
 * escaped. Pure.
 */
import type { Condition, HistoryEntry, StackStatus } from "../model/agent.js";
import { esc, renderHtmlPage } from "./html-page.js";
import { conditionOf, headlineOf, shortSha } from "./agent-status.js";

const PAGE_CSS = `<style>.badge{font-size:12px;border-radius:999px;padding:0 8px;border:1px solid currentColor;white-space:nowrap}
.st-True{color:var(--add)}.st-False{color:var(--del)}.st-Unknown{color:var(--muted)}.stalled-true td:first-child{border-left:4px solid var(--del)}</style>`;

function badge(c: Condition | undefined, type: string): string {
  if (!c) return "";
  return `<span class="badge st-${esc(c.status)}" title="${esc(c.message)}">${esc(type)}=${esc(c.status)} ${esc(c.reason)}</span>`;
}

function rowClasses(s: StackStatus): string {
  const classes = [`ready-${(conditionOf(s, "Ready")?.status ?? "Unknown").toLowerCase()}`];
  if (conditionOf(s, "Stalled")?.status === "True") classes.push("stalled-true");
  if (s.drift.length > 0) classes.push("drift");
  if (s.waiting.length > 0) classes.push("waiting");
  return classes.join(" ");
}

function waitingList(s: StackStatus): string {
  if (s.waiting.length === 0) return "";
  const items = s.waiting.map((w) => `<li><b>${esc(w.rule)}</b> (${esc(w.level)}): ${esc(w.message)}${w.command ? `<br><code>${esc(w.command)}</code>` : ""}</li>`);
  return `<ul class="waiting-list">${items.join("")}</ul>`;
}

function driftList(s: StackStatus, limit: number): string {
  if (s.drift.length === 0) return "";
  const items = s.drift.slice(0, limit).map((d) => `<li><code>${esc(d.address)}</code> ${esc(d.action)}: ${esc(d.detail)}</li>`);
  const more = s.drift.length > limit ? `<li class="muted">and ${s.drift.length - limit} more</li>` : "";
  return `<p>Drift since ${esc(s.drift_since ?? "")}:</p><ul class="drift-list">${items.join("")}${more}</ul>`;
}

export function renderAgentIndex(stacks: StackStatus[], at: { now: string; title?: string }): string {
  const rows = stacks.map((s) => {
    const rev = s.last_applied_revision;
    return [
      `<tr data-stack="${esc(s.name)}" class="${rowClasses(s)}">`,
      `<td><a href="stacks/${encodeURIComponent(s.name)}">${esc(s.name)}</a><br><span class="muted">${esc(s.mode)}${s.suspended ? ", suspended" : ""}</span></td>`,
      `<td>${badge(conditionOf(s, "Ready"), "Ready")} ${badge(conditionOf(s, "Stalled"), "Stalled")}<br>${esc(headlineOf(s))}</td>`,
      `<td>${rev ? `<code>${esc(shortSha(rev))}</code> ${esc(rev.subject)}<br><span class="muted">${esc(rev.author)}</span>` : "none"}</td>`,
      `<td>${driftList(s, 3)}${waitingList(s)}${s.rollouts.map((r) => `<p>${esc(r.address)}: ${esc(r.summary)}</p>`).join("")}</td>`,
      "</tr>",
    ].join("");
  });
  const body = [
    PAGE_CSS,
    `<h1>${esc(at.title ?? "edgeplan agent")}</h1>`,
    `<p class="muted">${stacks.length} stacks, at ${esc(at.now)}</p>`,
    `<table id="stacks"><thead><tr><th>Stack</th><th>Status</th><th>Applied revision</th><th>Drift, waiting, rollouts</th></tr></thead><tbody>${rows.join("\n")}</tbody></table>`,
  ];
  return renderHtmlPage(at.title ?? "edgeplan agent", body);
}

export function renderAgentStack(s: StackStatus, history: HistoryEntry[], at: { now: string }): string {
  const conditions = s.conditions.map((c) => `<tr><td>${badge(c, c.type)}</td><td>${esc(c.since)}</td><td><pre>${esc(c.message)}</pre></td></tr>`);
  const rev = (r: StackStatus["last_applied_revision"]) =>
    r ? `<code>${esc(shortSha(r))}</code> ${esc(r.subject)} <span class="muted">by ${esc(r.author)}, ${esc(r.at)}</span>` : "none";
  const entries = history.map(
    (h) =>
      `<tr id="h-${h.seq}"><td>${esc(h.finished_at)}</td><td>${esc(h.trigger)}</td><td><code>${esc(shortSha(h.revision))}</code></td><td>${esc(h.result)}</td><td>${esc(h.message)}${
        h.plan_text ? `<details><summary>plan</summary><pre>${esc(h.plan_text)}</pre></details>` : ""
      }${h.report ? `<details><summary>report</summary><pre>${esc(h.report)}</pre></details>` : ""}</td></tr>`,
  );
  const body = [
    PAGE_CSS,
    `<p><a href="../">all stacks</a></p>`,
    `<h1>${esc(s.name)}</h1>`,
    `<p class="muted">source ${esc(s.source)}, mode ${esc(s.mode)}${s.suspended ? ", suspended" : ""}, at ${esc(at.now)}</p>`,
    `<table id="conditions"><tbody>${conditions.join("")}</tbody></table>`,
    `<dl><dt>Applied</dt><dd>${rev(s.last_applied_revision)}</dd><dt>Attempted</dt><dd>${rev(s.last_attempted_revision)}</dd></dl>`,
    s.drift.length > 0 ? `<h2>Drift</h2>${driftList(s, 200)}` : "",
    s.waiting.length > 0 ? `<h2>Waiting for a person</h2>${waitingList(s)}` : "",
    s.rollouts.length > 0 ? `<h2>Rollouts</h2><ul>${s.rollouts.map((r) => `<li>${esc(r.address)}: ${esc(r.summary)}</li>`).join("")}</ul>` : "",
    `<h2>History</h2><table id="history"><thead><tr><th>Finished</th><th>Trigger</th><th>Revision</th><th>Result</th><th>What</th></tr></thead><tbody>${entries.join("\n")}</tbody></table>`,
  ];
  return renderHtmlPage(`${s.name}: edgeplan agent`, body);
}
