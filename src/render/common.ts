/**
 * Words and symbols shared by the renderers, so that text and Markdown say the same thing. Renderers only read a
 * Plan; they never compute what it contains. Pure.
 */
import type {
  Change,
  Drift,
  Estimate,
  FieldDiff,
  JsonValue,
  Orphan,
  Plan,
  PlanPolicies,
  PolicyResult,
  RolloutStep,
  SamlOutput,
  WeightChange,
  WeightedBackendValue,
} from "../model/plan.js";
import { POLICY_LEVELS } from "../model/plan.js";
import { stepGraceMs } from "../kinds/weighted-backend-rollout.js";
import { isPauseStep, promoteCommand } from "../core/rollout.js";
import { changeWriteOf } from "../core/change-write.js";
import { sameWeights, shareOf } from "../kinds/weighted-backend.js";
import type { MetricProvider, RolloutCheck, RolloutMetric } from "../model/state.js";
import { SENSITIVE, shownUrl } from "../model/redact.js";

export const NO_CHANGES = "No changes. Live state matches the manifests.";

/**
 * The line of a plan without changes: `NO_CHANGES`, unless orphans are kept (no manifest names them, and without
 * `--prune` or with `protect` they stay): then the live state does not match, and the line says so.
 */
export function noChangesLine(plan: Plan): string {
  const kept = plan.orphans.filter((o) => o.action === "keep");
  if (kept.length === 0) return NO_CHANGES;
  const prunable = kept.some((o) => !o.protected);
  const them = kept.length === 1 ? "it" : "them";
  return (
    `No changes to the objects of the manifests; ${kept.length} ${kept.length === 1 ? "orphan" : "orphans"} of stack "${plan.stack}" ` +
    `that no manifest names ${kept.length === 1 ? "is" : "are"} kept${prunable ? ` (--prune deletes ${them})` : ""}.`
  );
}

/** The marker of a change, as Terraform draws them (`+`, `~`, `-`), plus edgeplan's own for ownership. */
export type ChangeSymbol = "+" | "~" | "-" | ">" | "!" | "=>" | ">>";

export const SYMBOL_LEGEND: ReadonlyArray<[ChangeSymbol, string]> = [
  ["+", "create"],
  ["~", "update in place"],
  ["-", "delete"],
  [">", "adopt (add the owner marker)"],
  ["!", "take over from another stack"],
  ["=>", "rename (rewrite the owner marker, keep the id)"],
  [">>", "rollout step"],
];

/**
 * The legend of the symbols a plan's changes use, in SYMBOL_LEGEND's order. A rollout step's pace is named as the
 * manifests set it: `max_step` points, the `steps:` list, or both when the plan holds rollouts of each kind.
 */
export function legendOf(changes: readonly Change[]): Array<[ChangeSymbol, string]> {
  const used = new Set(changes.map(symbolOf));
  const rollouts = changes.flatMap((c) => (c.kind === "weighted_backend" && c.rollout ? [c.rollout] : []));
  const paces = [
    ...(rollouts.some((r) => r.shares === null) ? ["no child's share of traffic moves more than max_step points"] : []),
    ...(rollouts.some((r) => r.shares !== null) ? ["traffic moves to the next share of the manifest's steps: list"] : []),
  ];
  return SYMBOL_LEGEND.filter(([symbol]) => used.has(symbol)).map(([symbol, meaning]): [ChangeSymbol, string] =>
    symbol === ">>" && paces.length > 0 ? [symbol, `${meaning} (${paces.join("; or ")})`] : [symbol, meaning],
  );
}

export function symbolOf(change: Change): ChangeSymbol {
  if (change.kind === "weighted_backend") {
    switch (change.action) {
      case "create":
        return "+";
      case "update":
        return "~";
      case "delete":
        return "-";
      case "adopt":
        return ">";
      case "takeover":
        return "!";
      case "rename":
        return "=>";
      case "rollout":
        return ">>";
    }
  }
  if (change.action === "delete") return "-";
  return change.before === null ? "+" : "~";
}

/** `will be created`, `will be updated in place`, ... */
export function phraseOf(change: Change): string {
  if (change.kind === "inventory") {
    if (change.action === "create") return "will be created";
    return change.action === "delete" ? "will be deleted (it records no module any more)" : "will be updated";
  }
  if (change.kind === "weighted_backend") {
    switch (change.action) {
      case "create":
        return "will be created";
      case "update":
        return "will be updated in place";
      case "delete":
        return "will be deleted";
      case "adopt":
        return "will be adopted";
      case "takeover":
        return "will be taken over";
      case "rename":
        return `will be renamed from "${change.previous_owner?.name ?? ""}"`;
      case "rollout":
        return rolloutPhrase(change.rollout);
    }
  }
  if (change.action === "delete") return "will be deleted";
  if (change.recreates) return "will be set again (it was deleted outside edgeplan)";
  // A module's PUT keeps the route and the module's generated values: an update in place, never a delete and create.
  return change.before === null ? "will be set (the route has none yet)" : "will be updated in place";
}

/** The heading of what changed outside edgeplan, shown before the plan in every format. */
export const DRIFT_HEADING = "Changed outside edgeplan since the last apply";

/** One object changed outside edgeplan, as a line: `ADDRESS: deleted: how edgeplan knows, and what the plan does`. */
export function driftLine(d: Drift): string {
  return `${d.address}: ${d.what}: ${d.reason}`;
}

/** The mark of a drift line: `-` for an object deleted, `~` for one changed. */
export function driftSymbol(d: Drift): "-" | "~" {
  return d.what === "deleted" ? "-" : "~";
}

/** The warnings of a change (only module changes carry some). */
export function changeWarnings(change: Change): readonly string[] {
  return change.kind === "saml" || change.kind === "circuit_breaker" ? (change.warnings ?? []) : [];
}

/** `will take rollout step 2 of 4`, `rollout step 3 of 4, due at ...`, `rollout halted at step 2 of 4` */
function rolloutPhrase(r: RolloutStep | undefined): string {
  if (!r) return "will take a rollout step";
  const of = `${r.step} of ${r.steps}`;
  if (r.status === "halted") return `rollout halted before step ${of}`;
  if (r.status === "paused") return `rollout paused before step ${of}`;
  const when = r.status === "due" ? "" : `, due at ${r.due_at}`;
  switch (r.phase) {
    case "step":
      return r.status === "due" ? `will take rollout step ${of}` : `rollout step ${of}${when}`;
    case "confirm":
      return `rollout step ${of} written: the last ${lastGate(r)}, then the rollout ends${when}`;
    case "return":
      return "will go back to the weights the rollout started from, at once";
    case "halt":
      return "rollout halted: the weights it started from are written back";
    case "pause":
      return "rollout paused: it waits for edgeplan rollout promote or abort";
  }
}

/** What is asked once more after the last step: the check, the analysis, or both. */
function lastGate(r: RolloutStep): string {
  if (!r.analysis) return "check";
  return r.check ? "check and analysis" : "analysis";
}

/** When a step is written. A due step records the plan's time, so a saved plan applied later than its grace is held. */
function stepWhen(r: RolloutStep): string {
  if (r.status === "halted") return "halted";
  if (r.status === "paused") return `paused (${r.paused_reason ?? ""})`;
  if (r.status === "waiting") return `due at ${r.due_at}`;
  return `due now (a saved plan takes it if applied within ${msText(stepGraceMs(r.interval_ms))}; later, plan again)`;
}

/** A metric as a plan shows it: `error-rate (prometheus, 3 measurements 30s apart, 1 failure allowed)`. */
function metricText(m: RolloutMetric): string {
  const many = m.count === 1 ? "1 measurement" : `${m.count} measurements ${msText(m.interval_ms)} apart`;
  const delay = m.initial_delay_ms > 0 ? ` after ${msText(m.initial_delay_ms)}` : "";
  return `${m.name} (${m.provider.kind}, ${many}${delay}, ${m.failure_limit} ${m.failure_limit === 1 ? "failure" : "failures"} allowed)`;
}

/** A metric's provider as shown: its URL's query hidden, its header values `(sensitive)`. */
function shownProvider(p: MetricProvider): MetricProvider {
  if (p.kind !== "web") return p;
  return { ...p, url: shownUrl(p.url), headers: Object.fromEntries(Object.keys(p.headers).map((name) => [name, SENSITIVE])) };
}

/**
 * The plan as every output shows it: a rollout's check URL without its query, its metrics' URLs too and their header
 * values `(sensitive)`, since a query or a header may carry a token. Only the saved plan keeps them, to send them.
 */
export function hideSensitive(plan: Plan): Plan {
  const changes = plan.changes.map((c): Change => {
    if (c.kind !== "weighted_backend" || !c.rollout) return c;
    const r = c.rollout;
    const analysis = r.analysis?.map(shownMetric);
    const gates = { check: shownCheck(r.gates.check), analysis: r.gates.analysis.map(shownMetric) };
    return { ...c, rollout: { ...r, check: shownCheck(r.check), ...(analysis ? { analysis } : {}), gates } };
  });
  return { ...plan, changes };
}

function shownCheck<T extends RolloutCheck | null>(check: T): T {
  return check === null ? check : { ...check, url: shownUrl(check.url) };
}

function shownMetric(m: RolloutMetric): RolloutMetric {
  return { ...m, provider: shownProvider(m.provider) };
}

/**
 * What a rollout change says beside its weights: where the rollout stands, what is checked before the step, and
 * when the step after it is due. Comment lines without their `# ` prefix.
 */
export function rolloutLines(change: Change): string[] {
  if (change.kind !== "weighted_backend" || !change.rollout) return [];
  const r = change.rollout;
  const pace =
    r.shares === null ? `at most ${r.max_step} points per step` : `steps at ${r.shares.map((s) => (typeof s === "number" ? `${s}%` : "pause")).join(", ")} of the move`;
  const lines = [`rollout: step ${r.step} of ${r.steps}, ${pace}, at least ${r.interval} apart; ${stepWhen(r)}`];
  if (r.check) lines.push(`check before this step: ${checkText(r.check)}`);
  if (r.analysis) lines.push(`analysis before this step: ${r.analysis.map(metricText).join("; ")}`);
  const write = changeWriteOf(change);
  const gates = write.rollout?.gates ?? r.gates;
  // What guards the steps to come is part of what is reviewed: shown when this step has no check of its own.
  if (!r.check && !r.analysis && (gates.check || gates.analysis.length > 0) && r.phase === "step" && r.step < r.steps) {
    const asked = [
      ...(gates.check ? [`check ${checkText(gates.check)}`] : []),
      ...(gates.analysis.length > 0 ? [`analysis ${gates.analysis.map(metricText).join("; ")}`] : []),
    ];
    lines.push(`before each later step: ${asked.join("; ")}`);
  }
  const names = new Map(change.weights.map((w) => [w.child, w.name] as const));
  // Both ends of the rollout are shown, whichever step this is: the step's weights above, the final ones here.
  const final = (write.end as WeightedBackendValue | null)?.backends ?? r.final;
  const total = Object.values(final).reduce((s, x) => s + x, 0);
  const finals = Object.entries(final).map(([child, weight]) => `${names.get(child) ?? child} ${weight} (${shareOf(weight, total)}%)`);
  const writesThem = write.now !== null && sameWeights(final, change.after?.backends ?? {});
  if (finals.length > 0) lines.push(`final: ${finals.join(", ")} (the manifest's weights${writesThem ? "; this step writes them" : ""})`);
  if (r.next_due_at !== null && r.status !== "halted" && isPauseStep(r, r.step + 1, r.steps)) {
    lines.push(`then pause step ${r.step + 1} of ${r.steps}: no step after it until "${promoteCommand(change.name)}" (once this one is written)`);
  } else if (r.next_due_at !== null && r.status !== "halted") {
    lines.push(`next step due at ${r.next_due_at} (once this one is written)`);
  }
  return lines;
}

/** `GET URL (expect 200, timeout 5s)` */
function checkText(check: RolloutCheck): string {
  return `GET ${shownUrl(check.url)} (expect ${check.expect_status ?? "any 2xx"}, timeout ${msText(check.timeout_ms)})`;
}

/** `10s`, `1500ms` */
function msText(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** The address followed by the live id, when there is one. */
export function titleOf(change: { address: string; id?: string | null }): string {
  return change.id && !change.address.endsWith(change.id) ? `${change.address} (${change.id})` : change.address;
}

/**
 * The id an orphan is shown with: a weighted backend's own; none for a route module, whose address names its edge and
 * route (the orphan's `id` is that of the inventory record that lists it, which is not the module's).
 */
export function orphanId(orphan: Pick<Orphan, "address" | "id">): string | null {
  return orphan.address.startsWith("weighted_backend.") ? orphan.id : null;
}

/** An orphan as shown: its address, and its id when it has one of its own. */
export function orphanTitle(orphan: Pick<Orphan, "address" | "id">): string {
  return titleOf({ address: orphan.address, id: orphanId(orphan) });
}

/** A child of a weighted backend as shown: its id, its name when it has one, or `name (known after apply)`. */
export function childLabel(w: WeightChange): string {
  if (w.known_after_apply) return `${w.child} (known after apply)`;
  return w.name !== null ? `${w.child} (${w.name})` : w.child;
}

/** `9000 (90%)` */
export function weightText(weight: number | null, share: number | null): string {
  return `${weight ?? 0} (${share ?? 0}%)`;
}

/** A value in a diff line: JSON (strings quoted, objects compact). */
export function valueText(value: JsonValue): string {
  return JSON.stringify(value);
}

/** Children shown in a diff: those whose weight or share moves. The others are only counted. */
export function visibleWeights(weights: WeightChange[]): { shown: WeightChange[]; hidden: number } {
  const shown = weights.filter((w) => w.changed || w.share_before !== w.share_after);
  return { shown, hidden: weights.length - shown.length };
}

/** What an inventory write does to one module's entry, as words: `record ownership`, `forget ownership`, the protect flag. */
export function ownershipText(diff: FieldDiff): string {
  const protect = (v: JsonValue): boolean => typeof v === "object" && v !== null && !Array.isArray(v) && v.protect === true;
  if (diff.op === "add") return `record ownership${protect(diff.after) ? " (protected)" : ""}`;
  if (diff.op === "remove") return "forget ownership";
  return `protect: ${protect(diff.before)} -> ${protect(diff.after)}`;
}

/**
 * `Plan: 1 to create, 2 to update, 0 to delete.` plus every other kind of change that occurs. Each count is that of
 * the lines drawn with its symbol (`+`, `~`, `-`), whatever their kind, so the line never says `0 to delete` under a
 * deletion; a count that holds modules or inventory records says how many of each.
 */
export function summaryLine(plan: Plan): string {
  const s = plan.summary;
  const count = (symbol: ChangeSymbol, verb: string): string => {
    const changes = plan.changes.filter((c) => symbolOf(c) === symbol);
    const kinds = SUMMARY_KINDS.map(([test, one, many]) => [changes.filter(test).length, one, many] as const).filter(([n]) => n > 0);
    const detail = kinds.some(([, one]) => one !== "weighted backend") ? ` (${kinds.map(([n, one, many]) => `${n} ${n === 1 ? one : many}`).join(", ")})` : "";
    return `${changes.length} to ${verb}${detail}`;
  };
  const parts = [count("+", "create"), count("~", "update"), count("-", "delete")];
  if (s.adopt) parts.push(`${s.adopt} to adopt`);
  if (s.takeover) parts.push(`${s.takeover} to take over`);
  if (s.rename) parts.push(`${s.rename} to rename`);
  if (s.rollout) parts.push(`${s.rollout} ${s.rollout === 1 ? "rollout" : "rollouts"}`);
  return `Plan: ${parts.join(", ")}.`;
}

/** The kinds a summary count is split into, with their nouns. */
const SUMMARY_KINDS: ReadonlyArray<readonly [(c: Change) => boolean, string, string]> = [
  [(c) => c.kind === "weighted_backend", "weighted backend", "weighted backends"],
  [(c) => c.kind === "saml" || c.kind === "circuit_breaker", "module", "modules"],
  [(c) => c.kind === "inventory", "inventory record", "inventory records"],
];

/** `about 40 s`, `about 16 min`, `about 2 h 5 min`. */
export function durationText(seconds: number): string {
  if (seconds < 90) return `about ${seconds} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 120 ? `about ${minutes} min` : `about ${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/**
 * `apply will send 12 requests (10 writes, 2 reads to check convergence); at 120/60s and 4 at once, that is about
 * 1 s.`: what the
 * estimate says, in one sentence.
 */
export function estimateLine(e: Estimate): string {
  const n = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`;
  const what = `apply will send ${n(e.requests, "request", "requests")} (${n(e.writes, "write", "writes")}, ${n(e.reads, "read", "reads")} to check convergence)`;
  const pace = `${e.rate_limit !== null ? `at ${e.rate_limit}` : "with no rate limit"} and ${e.concurrency} at once,`;
  return `${what}; ${pace} that is ${durationText(e.seconds)}.`;
}

/** Field labels of the outputs, in the order a person fills them into an IdP. */
export const OUTPUT_FIELDS = [
  ["entity_id", "entity id"],
  ["assertion_consumer_service_url", "ACS URL"],
  ["single_logout_url", "SLO URL"],
  ["metadata_url", "metadata URL"],
  ["certificate_sha256", "certificate SHA-256"],
] as const;

export const KNOWN_AFTER_APPLY = "(known after apply)";

/**
 * The outputs a rendering shows: only values the IdP does not hold yet. Those it holds are left out without a word
 * (a plan that changes nothing of them says nothing of them); `--format json` lists them all.
 */
export interface ShownOutputs {
  shown: readonly SamlOutput[];
}

/**
 * The outputs of a plan worth showing: those of the SAML modules it creates (the server keeps a module's values
 * across replaces, so the others are what the IdP already holds). JSON keeps them all.
 */
export function planOutputs(plan: Pick<Plan, "outputs">): ShownOutputs {
  return { shown: plan.outputs.filter((o) => o.known_after_apply) };
}

/** The outputs of an apply's report worth showing: those the run set or changed (all when the report does not say). */
export function reportOutputs(report: { outputs: readonly SamlOutput[]; changedOutputs?: readonly string[] }): ShownOutputs {
  const changed = report.changedOutputs;
  return { shown: changed === undefined ? report.outputs : report.outputs.filter((o) => changed.includes(o.address)) };
}

/**
 * The sentence above the SAML modules of a plan whose IdP values are known only after apply: a plan names them, and
 * the apply's report shows their values, once.
 */
export const PENDING_OUTPUTS = "IdP values of these SAML modules, known after apply (the apply shows them, to copy into the IdP):";

/** An output value as shown: the value, `(known after apply)`, or `(not available)` when the server gave none. */
export function outputText(value: string | null, knownAfterApply: boolean): string {
  return value ?? (knownAfterApply ? KNOWN_AFTER_APPLY : "(not available)");
}

/**
 * The line at the top of a plan made in an environment of the project file: which one, and which API it read, so
 * that a reviewer sees a staging plan is not a production one. Null when the project file defines none.
 */
export function environmentLine(plan: Pick<Plan, "environment" | "stack">): string | null {
  const env = plan.environment;
  return env ? `Environment ${env.name}: API ${env.api_url}, stack "${plan.stack}".` : null;
}

/**
 * The sentence at the top of a targeted plan (`--target`, `--exclude`), or null for a whole plan: the rest of the
 * stack was not planned, so the live side may still differ from the manifests.
 */
export function targetedLine(plan: Plan): string | null {
  if (!plan.targeted) return null;
  const parts: string[] = [];
  if (plan.options.targets.length > 0) parts.push(`only ${plan.options.targets.join(", ")}`);
  if (plan.options.excludes.length > 0) parts.push(`without ${plan.options.excludes.join(", ")}`);
  return `Targeted plan (${parts.join("; ")}): the rest of stack "${plan.stack}" is not planned and may still differ from the manifests.`;
}

/** Ignored differences of objects the plan does not change (those it changes carry them as notes). */
export function ignoredOfUnchanged(plan: Plan): Plan["ignored"] {
  const changed = new Set(plan.changes.map((c) => c.address));
  return plan.ignored.filter((i) => !changed.has(i.address));
}

export const IGNORED_HEADING = "Ignored (ignore_changes): these fields differ and are left as they are live";

/** `Policies: 2 rules, 6 checks: 5 passed, 1 failed (deny 1).`: passing checks are counted, never listed. */
export function policiesLine(p: PlanPolicies): string {
  const rules = `${p.rules} ${p.rules === 1 ? "rule" : "rules"}`;
  const checks = `${p.evaluated} ${p.evaluated === 1 ? "check" : "checks"}`;
  if (p.results.length === 0) return `Policies: ${rules}, ${checks}: all passed.`;
  const levels = POLICY_LEVELS.map((l) => [l, p.results.filter((r) => r.level === l).length] as const)
    .filter(([, n]) => n > 0)
    .map(([l, n]) => `${l} ${n}`);
  return `Policies: ${rules}, ${checks}: ${p.passed} passed, ${p.results.length} failed (${levels.join(", ")}).`;
}

/** What a level asks of the person applying: shown beside each failed policy. */
export const POLICY_LEVEL_NOTE: Readonly<Record<PolicyResult["level"], string>> = {
  deny: "the plan cannot be applied",
  ack: "apply needs --ack",
  warn: "a warning",
};

/** The place a result is about: its change's address, or the plan for a policy over the whole plan. */
export function policyPlace(r: PolicyResult): string {
  return r.address ?? "the plan";
}
