import { describe, expect, it } from "vitest";
import { parseJsonPath, readJsonPath } from "../../src/model/json-path.js";

function read(value: unknown, path: string): unknown {
  const parsed = parseJsonPath(path);
  if ("error" in parsed) throw new Error(parsed.error);
  return readJsonPath(value, parsed.steps);
}

describe("the simple JSONPath of a metric", () => {
  const answer = { healthy: true, checks: [{ name: "db", ok: false, "error rate": 0.02 }], nested: { a: { b: [1, [2, 3]] } } };

  it("reads names, indexes and quoted names, in any mix", () => {
    expect(read(answer, "$.healthy")).toEqual({ found: true, value: true });
    expect(read(answer, "$.checks[0].ok")).toEqual({ found: true, value: false });
    expect(read(answer, "$.checks[0]['error rate']")).toEqual({ found: true, value: 0.02 });
    expect(read(answer, '$["nested"].a.b[1][0]')).toEqual({ found: true, value: 2 });
    expect(read(answer, "$")).toEqual({ found: true, value: answer });
    expect(read([5, 6], "$[1]")).toEqual({ found: true, value: 6 });
  });

  it("says which step is missing", () => {
    expect(read(answer, "$.checks[1].ok")).toEqual({ found: false, missing: "$.checks[1]" });
    expect(read(answer, "$.healthy.value")).toEqual({ found: false, missing: "$.healthy.value" });
    expect(read(answer, "$.checks['db']")).toEqual({ found: false, missing: "$.checks.db" });
    expect(read(answer, "$.nested['x y']")).toEqual({ found: false, missing: '$.nested["x y"]' });
    // A key of the prototype is not a key of the answer.
    expect(read(answer, "$.constructor")).toEqual({ found: false, missing: "$.constructor" });
  });

  it("refuses what it does not read, saying where", () => {
    expect(parseJsonPath("healthy")).toEqual({ error: 'a path starts with $ (e.g. $.status.healthy), got "healthy"' });
    expect(parseJsonPath("$.checks[x]")).toEqual({ error: `expected [index] or ['name'] at character 9 of "$.checks[x]"` });
    expect(parseJsonPath("$..a")).toEqual({ error: `expected a name after the . at character 2 of "$..a"; write ['name'] for other characters` });
    expect(parseJsonPath("$.a[*]")).toEqual({ error: `expected [index] or ['name'] at character 4 of "$.a[*]"` });
    expect(parseJsonPath("$a")).toEqual({ error: `unexpected "a" at character 2 of "$a"; steps are .name, ['name'] or [index]` });
  });
});
