/**
 * CEL's `matches` with RE2 semantics (the dialect CEL specifies), in linear time: the library's own `matches` is a
 * backtracking JavaScript RegExp, which a 41-character string can keep busy for minutes. Each `matches` call of an
 * expression is pointed at `RE2_MATCHES` when it is compiled, and a pattern written as a literal is checked then, so a
 * backreference or a lookaround is refused at its position. Pure.
 */
import { RE2JS } from "re2js";

/** The name the calls of `matches` are compiled to; messages name `matches` again (`userFunctionName`). */
export const RE2_MATCHES = "matchesRe2";

/** The CEL signature of the RE2 `matches`, registered on each environment. */
export const RE2_MATCHES_SIGNATURE = `string.${RE2_MATCHES}(string): bool`;

/** At most this many patterns are kept compiled per expression (patterns read from data may vary per change). */
const CACHE_SIZE = 64;

/** The steps a call costs besides its text: a match sets up a machine, measured at about 200 node evaluations. */
const CALL_STEPS = 200;

interface RegexNode {
  op?: unknown;
  args?: unknown;
  start?: number;
  end?: number;
}

/** `pattern` compiled, or why it is not an RE2 regular expression, in RE2's words. */
function compileRe2(pattern: string): RE2JS | string {
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    const reason = (err as Error).message.replace(/^error parsing regexp: /, "");
    return `the regular expression ${JSON.stringify(pattern)} is not RE2 syntax (${reason}); matches() takes RE2, which has no backreferences or lookaround (docs/policies.md)`;
  }
}

/**
 * Points each `x.matches(p)` of a parsed expression at `RE2_MATCHES` (the node's name is what the type checker
 * looks up) and checks the literal patterns: the first that RE2 refuses is returned with its offsets.
 */
export function useRe2Matches(node: unknown): { message: string; start: number; end: number } | undefined {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = useRe2Matches(child);
      if (found) return found;
    }
    return undefined;
  }
  if (node === null || typeof node !== "object") return undefined;
  const n = node as RegexNode;
  const args = Array.isArray(n.args) ? n.args : [];
  if (n.op === "rcall" && args[0] === "matches") {
    args[0] = RE2_MATCHES;
    const pattern = (args[2] as RegexNode[] | undefined)?.[0];
    if (pattern?.op === "value" && typeof pattern.args === "string") {
      const compiled = compileRe2(pattern.args);
      if (typeof compiled === "string") return { message: compiled, start: pattern.start ?? 0, end: pattern.end ?? 0 };
    }
  }
  if (n.op === "comprehension" && n.args !== null && typeof n.args === "object") return useRe2Matches(Object.values(n.args));
  return useRe2Matches(args);
}

/** A message of the library with the RE2 `matches` named as the user wrote it. */
export function userFunctionName(message: string): string {
  return message.replaceAll(RE2_MATCHES, "matches");
}

/**
 * The handler of `RE2_MATCHES`: CEL's partial match (`"abc".matches("b")` is true), with its patterns compiled once
 * per expression. `charge` is told the work of each call (a fixed cost, and the input's and the pattern's lengths: RE2 is linear
 * in both).
 * @throws Error when the pattern (one read from data) is not RE2 syntax.
 */
export function re2Matcher(charge: (units: number) => void): (input: string, pattern: string) => boolean {
  const cache = new Map<string, RE2JS>();
  return (input, pattern) => {
    charge(CALL_STEPS + input.length + pattern.length);
    let re = cache.get(pattern);
    if (re === undefined) {
      const compiled = compileRe2(pattern);
      if (typeof compiled === "string") throw new Error(compiled);
      re = compiled;
      if (cache.size < CACHE_SIZE) cache.set(pattern, re);
    }
    return re.test(input);
  };
}
