import { describe, expect, it } from "vitest";
import { CEL_LIMITS, celValue, compileCel } from "../../src/model/cel.js";

const VARS = { change: "map", result: "dyn" };

function run(source: string, vars: Record<string, unknown>) {
  const compiled = compileCel(source, VARS);
  if ("problem" in compiled) throw new Error(compiled.problem.message);
  return compiled.program.run(vars);
}

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
