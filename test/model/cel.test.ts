import { describe, expect, it } from "vitest";
import { CEL_LIMITS, celValue, compileCel } from "../../src/model/cel.js";
import { CEL_BUDGET, CelMeter } from "../../src/model/cel-budget.js";

const VARS = { change: "map", result: "dyn" };

function run(source: string, vars: Record<string, unknown>, meter?: CelMeter) {
  const compiled = compileCel(source, VARS);
  if ("problem" in compiled) throw new Error(compiled.problem.message);
  return compiled.program.run(vars, meter);
}

/** `ms` of wall time for `f`. */
function timed<T>(f: () => T): { value: T; ms: number } {
  const start = performance.now();
  const value = f();
  return { value, ms: performance.now() - start };
}

const REWRITE = "write it to read each list once and to build no list or string by concatenation (docs/policies.md, Budgets)";

describe("CEL expressions", () => {
  it("judge plan data with whole numbers as ints", () => {
    const change = celValue({ after: { backends: { a: 5000, b: 0, c: 5000 } } });
    expect(run("change.after.backends.filter(k, change.after.backends[k] > 0).size() >= 2", { change })).toEqual({ value: true });
    expect(run("change.after.backends.a + 1 == 5001", { change })).toEqual({ value: true });
  });

  it("compare a measurement kept as a double with ints and doubles", () => {
    expect(run("result < 0.01", { result: 0 })).toEqual({ value: true });
    expect(run("result >= 0.05", { result: 0.07 })).toEqual({ value: true });
    expect(run("result == true", { result: true })).toEqual({ value: true });
  });

  it("report a syntax error and a type error at their offsets", () => {
    expect(compileCel("change.after.", VARS)).toEqual({ problem: { message: "Expected IDENTIFIER, got EOF", start: 13, end: 13 } });
    const typed = compileCel('1 + "a" == 2', VARS);
    expect("problem" in typed && typed.problem).toEqual({ message: "no such overload: int + string", start: 0, end: 7 });
    expect(compileCel("1 + 2", VARS)).toEqual({ problem: { message: "the expression gives an int; it must give a bool (true or false)", start: 0, end: 5 } });
    expect(compileCel("other > 1", VARS)).toMatchObject({ problem: { message: expect.stringContaining("other") } });
  });

  it("refuse expressions past their bounds before evaluating them", () => {
    const long = `result == ${"1".repeat(CEL_LIMITS.maxChars)}`;
    expect(compileCel(long, VARS)).toMatchObject({ problem: { message: `the expression is ${long.length} characters long; at most 8192 are allowed` } });
    expect(compileCel(`${"(".repeat(40)}true${")".repeat(40)}`, VARS)).toMatchObject({ problem: { message: "Exceeded maxDepth (32)" } });
    expect(compileCel(`1${"+1".repeat(1500)} > 0`, VARS)).toMatchObject({ problem: { message: "Exceeded maxAstNodes (2000)" } });
  });

  it("refuse a comprehension inside another, whose cost would be the square of the list; a chain is allowed", () => {
    const nested = compileCel("change.after.backends.all(a, change.after.backends.exists(b, a != b))", VARS);
    expect(nested).toEqual({
      problem: {
        message: "a exists() inside another comprehension is not allowed (its cost would grow with the square of the list); write it without nesting",
        start: 29,
        end: 68,
      },
    });
    expect(compileCel("change.after.backends.filter(k, change.after.backends[k] > 0).all(k, k != '')", VARS)).toHaveProperty("program");
  });

  it("give an evaluation error instead of throwing, and reach no prototype", () => {
    expect(run("change.constructor == null", { change: {} })).toEqual({ error: "No such key: constructor" });
    expect(run("change.__proto__ == null", { change: {} })).toEqual({ error: "No such key: __proto__" });
    expect(run("result", { result: 3 })).toEqual({ error: "the expression gave 3, not true or false" });
  });
});

describe("matches(): RE2, linear in its input", () => {
  it("answer a pattern that backtracking takes minutes over, at once", () => {
    const description = `${"a".repeat(41)}!`;
    const { value, ms } = timed(() => run("change.description.matches('^([A-Za-z0-9]+ ?)*$')", { change: { description } }));
    expect(value).toEqual({ value: false });
    expect(ms).toBeLessThan(200);
    expect(run("change.description.matches('^[a-z]+$') && change.description.matches('b')", { change: { description: "abc" } })).toEqual({ value: true });
  });

  it("refuse a backreference or a lookaround when compiled, at the pattern's offsets", () => {
    expect(compileCel("change.description.matches('(a)\\\\1')", VARS)).toEqual({
      problem: {
        message:
          'the regular expression "(a)\\\\1" is not RE2 syntax (invalid escape sequence: `\\1`); matches() takes RE2, which has no backreferences or lookaround (docs/policies.md)',
        start: 27,
        end: 35,
      },
    });
    expect(compileCel("change.description.matches('x(?=y)')", VARS)).toMatchObject({
      problem: { message: expect.stringContaining("(invalid or unsupported Perl syntax: `(?=`)"), start: 27 },
    });
    expect(compileCel("change.description.matches('(?<!x)y')", VARS)).toMatchObject({ problem: { start: 27 } });
    // A type error names the function as written.
    expect(compileCel("1.matches('a')", VARS)).toMatchObject({ problem: { message: "found no matching overload for 'int.matches(string)'" } });
  });

  it("make a pattern read from data that RE2 refuses an evaluation error", () => {
    expect(run("change.description.matches(change.pattern)", { change: { description: "aa", pattern: "(a)\\1" } })).toEqual({
      error:
        'the regular expression "(a)\\\\1" is not RE2 syntax (invalid escape sequence: `\\1`); matches() takes RE2, which has no backreferences or lookaround (docs/policies.md)',
    });
  });
});

describe("the budget of an evaluation", () => {
  const changes = celValue(Array.from({ length: 200 }, (_, i) => ({ address: `weighted_backend.n${i}` })));
  const QUADRATIC = `change.changes.map(c, change.changes${" + change.changes".repeat(7)}).size() > 0`; // 1,400,000 steps

  it("stop one evaluation past its steps, as an error that says which budget and what to do", () => {
    const { value, ms } = timed(() => run(QUADRATIC, { change: { changes } }));
    expect(value).toEqual({ error: `over budget: one evaluation may take ${CEL_BUDGET.evaluationCost} steps and this one takes more; ${REWRITE}`, overBudget: true });
    expect(ms).toBeLessThan(1000);
  });

  it("stop a value larger than allowed, even where || would absorb an error", () => {
    const big = celValue(Array.from({ length: 60_000 }, () => 1));
    expect(run("size(change.big + change.big) > 0 || true", { change: { big } })).toEqual({
      error: `over budget: it built a list or map of 120000 elements, more than the 100000 an evaluation may build; ${REWRITE}`,
      overBudget: true,
    });
  });

  it("bound all the evaluations on one meter, by steps and by wall time", () => {
    const meter = new CelMeter(() => 0);
    const heavy = `change.changes.map(c, change.changes${" + change.changes".repeat(5)}).size() > 0`; // 800,000 steps each
    const outcomes = Array.from({ length: 8 }, () => run(heavy, { change: { changes } }, meter));
    expect(outcomes.filter((o) => "value" in o).length).toBe(6);
    expect(outcomes.at(-1)).toEqual({ error: `over budget: its evaluations over this plan took more than ${CEL_BUDGET.meterCost} steps; ${REWRITE}`, overBudget: true });
    let clock = 0;
    const slow = new CelMeter(() => clock);
    expect(run("change.changes.all(c, c.address != '')", { change: { changes } }, slow)).toEqual({ value: true });
    clock = CEL_BUDGET.meterMillis + 1;
    expect(run("change.changes.map(c, c.address + c.address).size() > 0", { change: { changes: celValue(Array(2000).fill({ address: "x" })) } }, slow)).toEqual({
      error: `over budget: its evaluations over this plan took more than ${CEL_BUDGET.meterMillis} ms; ${REWRITE}`,
      overBudget: true,
    });
    expect(slow.exhausted).toBeDefined();
  });
});
