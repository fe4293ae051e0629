/**
 * CEL (Common Expression Language) expressions, as policies and rollout analysis write them: compiled once with
 * bounds on their size and nesting, type-checked against the variables they may use, and evaluated over plain data
 * within a budget of steps, value sizes and time (`cel-budget.ts`), `matches()` in RE2 (`cel-regex.ts`). The
 * evaluator is `@marcbachmann/cel-js` (no dependencies, no prototype access: a map's keys are its own). Pure.
 */
import { Environment } from "@marcbachmann/cel-js";
import { CelMeter, meterAst } from "./cel-budget.js";
import { RE2_MATCHES_SIGNATURE, re2Matcher, userFunctionName, useRe2Matches } from "./cel-regex.js";

/**
 * Bounds of one expression: longer or deeper ones are refused when compiled, before they can cost time.
 * `maxComprehensionNesting`: comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`) inside one another; a
 * second level over a plan's changes would cost their square on every evaluation.
 */
export const CEL_LIMITS = { maxChars: 8192, maxAstNodes: 2000, maxDepth: 32, maxListElements: 1000, maxMapEntries: 1000, maxComprehensionNesting: 1 } as const;

const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);

interface CelNode {
  op?: unknown;
  args?: unknown;
  start?: number;
  end?: number;
}

/** The first comprehension nested deeper than `CEL_LIMITS.maxComprehensionNesting`, as a problem; undefined when none is. */
function nestedComprehension(node: unknown, depth = 0): CelProblem | undefined {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = nestedComprehension(child, depth);
      if (found) return found;
    }
    return undefined;
  }
  if (node === null || typeof node !== "object") return undefined;
  const n = node as CelNode;
  const args = Array.isArray(n.args) ? n.args : [];
  if (n.op !== "rcall" || !COMPREHENSIONS.has(args[0] as string)) return nestedComprehension(args, depth);
  if (depth + 1 > CEL_LIMITS.maxComprehensionNesting) {
    const message = `a ${String(args[0])}() inside another comprehension is not allowed (its cost would grow with the square of the list); write it without nesting`;
    return { message, start: n.start ?? 0, end: n.end ?? 0 };
  }
  // The list it runs over is evaluated once (a chain of comprehensions costs their sum); its body once per element.
  return nestedComprehension(args[1], depth) ?? nestedComprehension(args.slice(2), depth + 1);
}

/** The declared type of a variable, in CEL's names (`map`, `dyn`, `double`, `string`, `list`...). */
export type CelVariables = Readonly<Record<string, string>>;

/** An error in an expression: what, and where (0-based offsets into the source, `end` excluded). */
export interface CelProblem {
  message: string;
  start: number;
  end: number;
}

/** Why an evaluation gave no value; `overBudget` when it went over its budget (`CEL_BUDGET`). */
export interface CelFailure {
  error: string;
  overBudget?: true;
}

/**
 * A compiled expression: `run` answers true or false, or why it could not (an error of evaluation, or a budget
 * spent: never a throw, never longer than the budget). `meter` counts its cost; by default its own, so that one
 * evaluation is bounded; a caller that runs it many times over one plan passes one meter to bound them all.
 */
export interface CelProgram {
  readonly source: string;
  run(vars: Readonly<Record<string, unknown>>, meter?: CelMeter): { value: boolean } | CelFailure;
}

interface CelErrorLike {
  summary?: string;
  message?: string;
  range?: { start: number; end: number };
}

function problemOf(err: unknown, source: string): CelProblem {
  const e = err as CelErrorLike;
  const message = userFunctionName((e.summary ?? e.message ?? String(err)).split("\n")[0] as string);
  return { message, start: e.range?.start ?? 0, end: e.range?.end ?? source.length };
}

/**
 * Compiles `source` for `variables`: a syntax error, a type error (an operator or function that fits no type), a
 * result that cannot be a bool, or an expression over `CEL_LIMITS` is a problem at its offsets. The expression may use
 * only the variables named.
 */
export function compileCel(source: string, variables: CelVariables): { program: CelProgram } | { problem: CelProblem } {
  if (source.length > CEL_LIMITS.maxChars) {
    return { problem: { message: `the expression is ${source.length} characters long; at most ${CEL_LIMITS.maxChars} are allowed`, start: 0, end: 0 } };
  }
  const { maxChars: _, maxComprehensionNesting: __, ...limits } = CEL_LIMITS;
  // The meter of the evaluation under way: evaluations are synchronous, so one slot per expression is enough.
  let current = new CelMeter();
  let env = new Environment({ limits, homogeneousAggregateLiterals: false });
  env = env.registerFunction(
    RE2_MATCHES_SIGNATURE,
    re2Matcher((units) => current.charge(units)),
  );
  for (const [name, type] of Object.entries(variables)) env = env.registerVariable(name, type);
  try {
    const parsed = env.parse(source);
    const ast = (parsed as { ast?: unknown }).ast;
    const refused = nestedComprehension(ast) ?? useRe2Matches(ast);
    if (refused) return { problem: refused };
    meterAst(ast, () => current);
    const checked = parsed.check();
    if (!checked.valid) return { problem: problemOf(checked.error, source) };
    if (checked.type !== "bool" && checked.type !== "dyn") {
      return {
        problem: {
          message: `the expression gives ${/^[aeiou]/.test(checked.type ?? "") ? "an" : "a"} ${checked.type}; it must give a bool (true or false)`,
          start: 0,
          end: source.length,
        },
      };
    }
    const run = (vars: Readonly<Record<string, unknown>>, meter = new CelMeter()): { value: boolean } | CelFailure => {
      current = meter;
      return runParsed(parsed, vars, meter);
    };
    return { program: { source, run } };
  } catch (err) {
    return { problem: problemOf(err, source) };
  }
}

/** One evaluation on `meter`: over budget wins over any value (CEL's `||` and `&&` may absorb an error). */
function runParsed(parsed: (vars: Record<string, unknown>) => unknown, vars: Readonly<Record<string, unknown>>, meter: CelMeter): { value: boolean } | CelFailure {
  if (meter.exhausted) return { error: meter.exhausted, overBudget: true };
  meter.begin();
  try {
    const value = parsed({ ...vars });
    if (meter.overBudget) return { error: meter.overBudget, overBudget: true };
    if (typeof value === "boolean") return { value };
    return { error: `the expression gave ${typeof value === "bigint" ? `${value}` : (JSON.stringify(value) ?? String(value))}, not true or false` };
  } catch (err) {
    if (meter.overBudget) return { error: meter.overBudget, overBudget: true };
    return { error: problemOf(err, "").message };
  }
}

/**
 * Plain JSON data as CEL values: whole numbers become CEL ints (so `weight > 0` and `weight + 1` mean what they say),
 * other numbers doubles; objects and arrays are copied, everything else kept. A measurement that must stay a double
 * whatever its value (a metric's `result`) is passed as a number without this.
 */
export function celValue(json: unknown): unknown {
  if (typeof json === "number") return Number.isSafeInteger(json) ? BigInt(json) : json;
  if (Array.isArray(json)) return json.map(celValue);
  if (json !== null && typeof json === "object") {
    return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, celValue(v)]));
  }
  return json;
}
