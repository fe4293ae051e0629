/**
 * What must be true before a plan is applied: every risk acknowledged (`--ack RULE`, or `--force`), and a person's
 * `yes` (or `--auto-approve`). On a terminal, a risk no flag covers is asked about instead. The refusals are UnsafePlanError with a sentence that says what to pass. Pure.
 */
import { EdgeplanError, UnsafePlanError } from "../model/errors.js";
import type { Plan, PolicyResult, Risk } from "../model/plan.js";
import { RISK_RULES } from "../model/plan.js";

/** The question asked on a terminal; only `yes` goes on. */
export const APPROVAL_QUESTION = "Do you want to apply these changes? Only 'yes' is accepted: ";

/**
 * The rules of `--ack` values (repeatable; a value may also list rules separated by commas): built-in rules, and the
 * names of the project's policies (`policies`, in the order they are declared). Throws an EdgeplanError naming every
 * unknown rule and listing the rules.
 */
export function parseAckRules(values: readonly string[], policies: readonly string[] = []): string[] {
  const known: readonly string[] = [...RISK_RULES, ...policies];
  const rules = new Set<string>();
  const unknown: string[] = [];
  for (const value of values) {
    for (const part of value.split(",")) {
      const rule = part.trim();
      if (rule === "") continue;
      if (known.includes(rule)) rules.add(rule);
      else unknown.push(rule);
    }
  }
  if (unknown.length > 0) {
    const names = unknown.map((u) => `"${u}"`).join(", ");
    const policyNote = policies.length > 0 ? `, and the policies ${policies.join(", ")}` : "";
    throw new EdgeplanError(`--ack: unknown ${unknown.length === 1 ? "rule" : "rules"} ${names}; the rules are ${RISK_RULES.join(", ")}${policyNote}`);
  }
  return known.filter((r) => rules.has(r));
}

/** The risks of the plan that neither `--ack` nor `--force` covers. */
export function unacknowledgedRisks(plan: Pick<Plan, "risks">, acks: readonly string[], force: boolean): Risk[] {
  if (force) return [];
  return plan.risks.filter((r) => !acks.includes(r.rule));
}

/** The refusal of a plan with unacknowledged risks: each risk with its message, and the flags that let it through. */
export function buildRiskRefusal(risks: readonly Risk[]): UnsafePlanError {
  // Built-in rules in their order, then policies' names as the risks list them.
  const rules = [
    ...RISK_RULES.filter((rule) => risks.some((r) => r.rule === rule)),
    ...new Set(risks.map((r) => r.rule).filter((r) => !(RISK_RULES as readonly string[]).includes(r))),
  ];
  const n = risks.length;
  return new UnsafePlanError(
    [
      `the plan has ${n} ${n === 1 ? "risk" : "risks"} that must be acknowledged before it is applied:`,
      ...risks.map((r) => `  ${r.rule} (--ack ${r.rule}): ${r.message}`),
      `No change was sent. If the plan is what you want, apply it with ${rules.map((r) => `--ack ${r}`).join(" ")} (or --force to acknowledge every risk).`,
    ].join("\n"),
    "risk",
    rules,
  );
}

/** The question asked on a terminal for one risk that no flag acknowledged; `y` or `yes` goes on. */
export function riskQuestion(risk: Risk): string {
  return `Risk ${risk.rule}: ${risk.message}\nAcknowledge this risk and go on? (y/N) `;
}

/**
 * Asks a person to acknowledge each risk in turn (`prompt` shows the question on the terminal and returns the
 * answer). Resolves when every one is acknowledged; at the first other answer, throws the refusal that
 * `buildRiskRefusal` gives for that risk and those not asked yet, so the message says which flags would let it through.
 */
export async function confirmRisks(risks: readonly Risk[], prompt: (question: string) => Promise<string>): Promise<void> {
  for (const [i, risk] of risks.entries()) {
    const answer = (await prompt(riskQuestion(risk))).trim().toLowerCase();
    if (answer !== "y" && answer !== "yes") throw buildRiskRefusal(risks.slice(i));
  }
}

/**
 * The refusal of a plan that a `deny` policy forbids: each violation, and what to do. `--ack` and `--force` do not
 * lift it. `by` is the command that refuses it.
 */
export function buildPolicyDenial(denied: readonly PolicyResult[], by: "plan" | "apply"): UnsafePlanError {
  const n = denied.length;
  const what = by === "plan" ? "The plan was not saved" : "No change was sent";
  const rules = [...new Set(denied.map((r) => r.rule))];
  // The last line stands alone (the GitHub Action shows it as the failure): it names the policies and what to do.
  return new UnsafePlanError(
    [
      `the plan has ${n} ${n === 1 ? "violation" : "violations"} of policies of level deny:`,
      ...denied.map((r) => `  ${r.rule}: ${r.address ?? "the plan"}: ${r.message}`),
      `${what}: the plan is denied by ${rules.join(", ")}. Change the manifests so that ${rules.length === 1 ? "it holds" : "they hold"} (--ack and --force do not lift a deny), then plan again.`,
    ].join("\n"),
    "policy",
  );
}

/** The refusal when no one can be asked: no terminal and no `--auto-approve`. */
export function buildNoTerminalRefusal(): UnsafePlanError {
  return new UnsafePlanError(
    "apply needs approval, and there is no terminal to ask on; no change was sent. Review the plan above, then run again with --auto-approve " +
      "(in CI, apply a reviewed saved plan: edgeplan apply --plan FILE --auto-approve)",
    "no-terminal",
  );
}

/** The refusal when the answer to the question was not `yes`. */
export function buildDeclinedRefusal(answer: string): UnsafePlanError {
  const shown = answer.trim() === "" ? "an empty answer" : `"${answer.trim().slice(0, 40)}"`;
  return new UnsafePlanError(`apply cancelled: ${shown} is not 'yes'; no change was sent`, "declined");
}
