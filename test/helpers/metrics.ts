/**
 * Reading a Prometheus text exposition in tests: the value of one series, and `promtool check metrics` on a whole
 * scrape (Debian's prometheus package; .ci/run installs it).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** The values of the series `name` whose labels include `labels` (in any order). */
function values(text: string, name: string, labels: Record<string, string>): number[] {
  const found: number[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map([...(m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) found.push(Number(m[3]));
  }
  return found;
}

/** The value of the one series `name` with these labels (among others); undefined when there is none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return values(text, name, labels)[0];
}

/** The sum of every series `name` whose labels include `labels`. */
export function total(text: string, name: string, labels: Record<string, string> = {}): number {
  return values(text, name, labels).reduce((a, b) => a + b, 0);
}

export const PROMTOOL = "/usr/bin/promtool";

/** `promtool check metrics` on `text`: its exit code and what it said. Throws when promtool is not installed. */
export function promtoolCheck(text: string): { code: number | null; output: string } {
  if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} is missing: install Debian's prometheus package (.ci/run does)`);
  const r = spawnSync(PROMTOOL, ["check", "metrics"], { input: text, encoding: "utf8", timeout: 30_000 });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}
