/**
 * The budget of CEL evaluations: what the data of a plan can make an expression cost, bounded. The compile-time
 * bounds (`CEL_LIMITS`) bound an expression's text; these bound its evaluation, which grows with the data it reads
 * (a pull request writes descriptions and changes). A meter counts steps (each node evaluated, plus each element or
 * character of a value built, plus the text a regular expression reads) and the wall time, and an evaluation over
 * budget stops with `CelBudgetError`. Pure (the clock is a parameter).
 */

/**
 * `evaluationCost`: steps of one evaluation. `valueSize`: elements of one list or map, or characters of one string,
 * an evaluation may build. `meterCost` and `meterMillis`: steps and wall time of all evaluations on one meter (one
 * policy over one plan), so that a plan of many changes cannot multiply the cost of one evaluation.
 */
export const CEL_BUDGET = { evaluationCost: 1_000_000, valueSize: 100_000, meterCost: 5_000_000, meterMillis: 1_000 } as const;

/** How often (in steps) the clock is read: often enough to stop within milliseconds, rarely enough to cost nothing. */
const CLOCK_EVERY = 1024;

/** An evaluation went over its budget; the message says which budget and what to do. */
export class CelBudgetError extends Error {}

const REWRITE = "write it to read each list once and to build no list or string by concatenation (docs/policies.md, Budgets)";

/** Counts the cost of the evaluations given to it; one meter per policy and plan, or per lone evaluation. */
export class CelMeter {
  private total = 0;
  private evaluation = 0;
  private readonly deadline: number;
  /** Why the meter refuses every further evaluation; undefined while it has budget left. */
  exhausted: string | undefined;
  /** Set when the current evaluation went over budget, whatever the expression made of the error. */
  overBudget: string | undefined;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly budget: typeof CEL_BUDGET = CEL_BUDGET,
  ) {
    this.deadline = now() + budget.meterMillis;
  }

  /** Starts one evaluation. */
  begin(): void {
    this.evaluation = 0;
    this.overBudget = undefined;
  }

  /** Adds `units` steps. @throws CelBudgetError when a budget is spent. */
  charge(units: number): void {
    if (this.overBudget) throw new CelBudgetError(this.overBudget);
    const before = this.total;
    this.total += units;
    this.evaluation += units;
    if (this.evaluation > this.budget.evaluationCost) {
      this.stop(`one evaluation may take ${this.budget.evaluationCost} steps and this one takes more; ${REWRITE}`);
    }
    if (this.total > this.budget.meterCost) this.stop(`its evaluations over this plan took more than ${this.budget.meterCost} steps; ${REWRITE}`, true);
    if (Math.floor(before / CLOCK_EVERY) !== Math.floor(this.total / CLOCK_EVERY) && this.now() > this.deadline) {
      this.stop(`its evaluations over this plan took more than ${this.budget.meterMillis} ms; ${REWRITE}`, true);
    }
  }

  /** Charges a value built by the expression by its size. @throws CelBudgetError when it is larger than allowed. */
  built(value: unknown): void {
    const size = typeof value === "string" || Array.isArray(value) ? value.length : value instanceof Map ? value.size : 0;
    if (size > this.budget.valueSize) {
      const what = typeof value === "string" ? `a string of ${size} characters` : `a list or map of ${size} elements`;
      this.stop(`it built ${what}, more than the ${this.budget.valueSize} an evaluation may build; ${REWRITE}`);
    }
    this.charge(size);
  }

  private stop(reason: string, forGood = false): never {
    const message = `over budget: ${reason}`;
    this.overBudget = message;
    if (forGood) this.exhausted = message;
    throw new CelBudgetError(message);
  }
}

type Evaluate = (this: unknown, ev: unknown, ast: unknown, ctx: unknown) => unknown;

interface AstNode {
  op: string;
  args: unknown;
  meta: { alternate?: AstNode; macro?: { evaluate: Evaluate }; evaluate: Evaluate };
  evaluate: Evaluate;
}

/** Operators whose value is new (a sum, a call's result, a comprehension's list, a literal): its size is charged. */
const BUILDERS = new Set(["+", "*", "call", "rcall", "comprehension", "list", "map"]);

function isNode(x: object): x is AstNode {
  const n = x as Partial<AstNode>;
  return typeof n.op === "string" && typeof n.evaluate === "function" && typeof n.meta === "object";
}

/**
 * Makes every node of a parsed expression (those its macros expand to included) charge `meter()` when evaluated:
 * one step, and the size of a value it builds. Done once, before the expression is type-checked; each node's
 * evaluation is then dispatched as the library does it (its expansion, its macro, or its operator).
 */
export function meterAst(root: unknown, meter: () => CelMeter): void {
  const seen = new Set<object>();
  const visit = (x: unknown): void => {
    if (x === null || typeof x !== "object" || seen.has(x)) return;
    seen.add(x);
    if (Array.isArray(x)) return x.forEach(visit);
    if (!isNode(x)) {
      if (Object.getPrototypeOf(x) === Object.prototype) Object.values(x).forEach(visit);
      return;
    }
    const node = x;
    const builds = BUILDERS.has(node.op);
    node.evaluate = function metered(ev, ast, ctx) {
      const m = meter();
      m.charge(1);
      const { alternate, macro, evaluate } = node.meta;
      const value = alternate ? alternate.evaluate(ev, alternate, ctx) : macro ? macro.evaluate(ev, macro, ctx) : evaluate.call(node, ev, ast, ctx);
      if (builds) m.built(value);
      return value;
    };
    visit(node.args);
    visit(node.meta.alternate);
    if (node.meta.macro) Object.values(node.meta.macro).forEach(visit);
  };
  visit(root);
}
