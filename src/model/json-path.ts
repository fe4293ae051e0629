/**
 * The simple JSONPath of a metric's `json_path`: `$` followed by steps `.name`, `['name']` (or `["name"]`) and
 * `[index]`, as in `$.checks[0].healthy`. No wildcards, filters or recursive descent: a metric reads one value.
 * Pure.
 */

/** One step of a path: a key of an object, or an index of an array. */
export type JsonPathStep = { key: string } | { index: number };

const NAME = /^[A-Za-z_$][A-Za-z0-9_$-]*/;

/** One bracketed step at `text[at]` (`[0]`, `['a b']`): the step and the length it takes, or a message. */
function bracketStep(text: string, at: number): { step: JsonPathStep; length: number } | string {
  const index = /^\[(\d{1,9})\]/.exec(text.slice(at));
  if (index) return { step: { index: Number(index[1]) }, length: index[0].length };
  const quoted = /^\[(['"])((?:\\.|(?!\1).)*)\1\]/.exec(text.slice(at));
  if (quoted) return { step: { key: (quoted[2] as string).replace(/\\(.)/g, "$1") }, length: quoted[0].length };
  return `expected [index] or ['name'] at character ${at + 1}`;
}

/**
 * The steps of a path such as `$.a.b[0]['c d']`, or a message saying where it stops being one (with the path, so
 * that the caller adds only which field it is).
 */
export function parseJsonPath(text: string): { steps: JsonPathStep[] } | { error: string } {
  const t = text.trim();
  if (!t.startsWith("$")) return { error: `a path starts with $ (e.g. $.status.healthy), got "${t}"` };
  const steps: JsonPathStep[] = [];
  let at = 1;
  while (at < t.length) {
    if (t[at] === ".") {
      const name = NAME.exec(t.slice(at + 1));
      if (!name) return { error: `expected a name after the . at character ${at + 1} of "${t}"; write ['name'] for other characters` };
      steps.push({ key: name[0] });
      at += 1 + name[0].length;
      continue;
    }
    if (t[at] === "[") {
      const b = bracketStep(t, at);
      if (typeof b === "string") return { error: `${b} of "${t}"` };
      steps.push(b.step);
      at += b.length;
      continue;
    }
    return { error: `unexpected "${t[at]}" at character ${at + 1} of "${t}"; steps are .name, ['name'] or [index]` };
  }
  return { steps };
}

/** The value at `steps` in `value`, or `found: false` with the path up to the first step that is missing. */
export function readJsonPath(value: unknown, steps: readonly JsonPathStep[]): { found: true; value: unknown } | { found: false; missing: string } {
  let here = value;
  let path = "$";
  for (const step of steps) {
    if ("index" in step) {
      path += `[${step.index}]`;
      if (!Array.isArray(here) || step.index >= here.length) return { found: false, missing: path };
      here = here[step.index];
    } else {
      path += NAME.exec(step.key)?.[0] === step.key ? `.${step.key}` : `[${JSON.stringify(step.key)}]`;
      if (here === null || typeof here !== "object" || Array.isArray(here) || !Object.hasOwn(here, step.key)) return { found: false, missing: path };
      here = (here as Record<string, unknown>)[step.key];
    }
  }
  return { found: true, value: here };
}
