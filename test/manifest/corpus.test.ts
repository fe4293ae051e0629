/**
 * The corpus of invalid manifests: one folder per failure mode under corpus/, each with the exact output
 * `edgeplan validate` gives for it in expected.txt (every diagnostic, then the summary line, then the exit code).
 * A folder may hold env.json (the environment, default empty) and args.txt (the paths given, one a line, default
 * the folder itself). After a deliberate change of messages, regenerate with `UPDATE_CORPUS=1 npx vitest run
 * test/manifest/corpus.test.ts` and review the diff.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runValidate } from "../../src/commands/validate.js";

const corpus = path.join(path.dirname(fileURLToPath(import.meta.url)), "corpus");
const update = process.env.UPDATE_CORPUS === "1";
/** Certificates are checked against this time, so that the expected output never changes with the date. */
const NOW = new Date("2026-01-01T00:00:00Z");

const sink = (): { write(s: string): boolean; text: string } => ({
  text: "",
  write(s: string) {
    this.text += s;
    return true;
  },
});

/** What `edgeplan validate` prints for a corpus folder, stderr then stdout, and its exit code. */
async function validateOutput(dir: string): Promise<string> {
  const envFile = path.join(dir, "env.json");
  const argsFile = path.join(dir, "args.txt");
  const env = existsSync(envFile) ? (JSON.parse(readFileSync(envFile, "utf8")) as Record<string, string>) : {};
  const args = existsSync(argsFile) ? readFileSync(argsFile, "utf8").split("\n").filter(Boolean) : ["."];
  const stdout = sink();
  const stderr = sink();
  const code = await runValidate(args, { cwd: dir, env, now: NOW, stdout, stderr });
  return `${stderr.text}${stdout.text}exit ${code}\n`;
}

const cases = readdirSync(corpus)
  .filter((name) => /^\d{3}-/.test(name))
  .sort();

describe("corpus of invalid manifests", () => {
  it("holds at least 40 failure modes", () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });

  for (const name of cases) {
    it(name, async () => {
      const dir = path.join(corpus, name);
      const actual = await validateOutput(dir);
      const expectedFile = path.join(dir, "expected.txt");
      if (update) writeFileSync(expectedFile, actual);
      const expected = readFileSync(expectedFile, "utf8");
      expect(actual).toBe(expected);
      // Every case is a failure mode: it must report at least one problem.
      expect(actual).toMatch(/: (warning: )?\S/);
    });
  }
});
