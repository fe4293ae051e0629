/**
 * Apply on a terminal asks a person to acknowledge each risk that no `--ack` covers (y/N), instead of refusing;
 * `runApply` in this process against the real server, with a terminal faked by the CommandIO (the repository has no
 * pseudo-terminal harness). Without a terminal the refusal is unchanged (test/apply/cli.test.ts).
 */
import { afterAll, describe, expect, it } from "vitest";
import { APPROVAL_QUESTION, confirmRisks, riskQuestion } from "../../src/apply/approval.js";
import { runApply } from "../../src/commands/apply.js";
import type { CommandIO } from "../../src/commands/io.js";
import { UnsafePlanError } from "../../src/model/errors.js";
import type { Risk } from "../../src/model/plan.js";
import { closeWorlds, HR1, HR2, startWorld, wbYaml, type World } from "./e2e.js";

afterAll(closeWorlds);

/** A terminal that answers the questions in order, recording them. */
function terminal(world: World, answers: string[]): CommandIO & { out: string; err: string; questions: string[] } {
  const rec = {
    out: "",
    err: "",
    questions: [] as string[],
    stdout(text: string) {
      rec.out += text;
    },
    stderr(text: string) {
      rec.err += text;
    },
    env: { EDGEPLAN_API_URL: world.server.url, EDGEPLAN_API_KEY: world.server.apiKey },
    cwd: world.dir,
    stdoutIsTTY: false,
    stdinIsTTY: true,
    async prompt(question: string) {
      rec.questions.push(question);
      return answers.shift() ?? "";
    },
  };
  return rec;
}

const NO_TRAFFIC =
  "weighted_backend.dark: after this create the weighted backend has every weight at 0, so it sends no traffic anywhere. " +
  "Give a child a weight above 0, or apply with --ack no-traffic if that is intended.";

describe("apply on a terminal with a risk no flag acknowledges", () => {
  it("asks about the risk, then for 'yes', and applies", async () => {
    const w = await startWorld();
    w.manifests({ "dark.yaml": wbYaml("dark", { [HR1]: 0, [HR2]: 0 }) });
    const rec = terminal(w, ["y\n", "yes\n"]);
    const result = await runApply({ paths: ["m"], rateLimit: "off" }, rec);
    expect(rec.questions).toEqual([`Risk no-traffic: ${NO_TRAFFIC}\nAcknowledge this risk and go on? (y/N) `, APPROVAL_QUESTION]);
    expect(result.exitCode).toBe(0);
    expect((await w.owned()).has("dark")).toBe(true);
  });

  it("refuses at an answer that is not y, as without a terminal, and sends no change", async () => {
    const w = await startWorld();
    w.manifests({ "dark.yaml": wbYaml("dark", { [HR1]: 0, [HR2]: 0 }) });
    const rec = terminal(w, ["\n"]);
    const refusal = runApply({ paths: ["m"], rateLimit: "off" }, rec);
    await expect(refusal).rejects.toThrow(
      new UnsafePlanError(
        "the plan has 1 risk that must be acknowledged before it is applied:\n" +
          `  no-traffic (--ack no-traffic): ${NO_TRAFFIC}\n` +
          "No change was sent. If the plan is what you want, apply it with --ack no-traffic (or --force to acknowledge every risk).",
        "risk",
        ["no-traffic"],
      ),
    );
    expect(rec.questions).toHaveLength(1);
    expect(w.changeWrites()).toEqual([]);
    expect((await w.owned()).has("dark")).toBe(false);
  });

  it("asks nothing about a risk --ack covers", async () => {
    const w = await startWorld();
    w.manifests({ "dark.yaml": wbYaml("dark", { [HR1]: 0 }) });
    const rec = terminal(w, ["yes"]);
    expect((await runApply({ paths: ["m"], rateLimit: "off", ack: ["no-traffic"] }, rec)).exitCode).toBe(0);
    expect(rec.questions).toEqual([APPROVAL_QUESTION]);
  });
});

describe("confirmRisks", () => {
  const risk = (rule: Risk["rule"], message: string): Risk => ({ rule, addresses: [], message });
  const risks = [risk("traffic-shift", "moves 60 points"), risk("mass-delete", "deletes 12 objects")];

  it("asks each risk in turn and accepts y or yes in any case", async () => {
    const asked: string[] = [];
    const answers = ["Y", " yes "];
    await confirmRisks(risks, async (q) => {
      asked.push(q);
      return answers.shift() ?? "";
    });
    expect(asked).toEqual([riskQuestion(risks[0] as Risk), riskQuestion(risks[1] as Risk)]);
    expect(asked[1]).toBe("Risk mass-delete: deletes 12 objects\nAcknowledge this risk and go on? (y/N) ");
  });

  it("stops at the first other answer, refusing that risk and those not asked yet", async () => {
    const asked: string[] = [];
    const refused = confirmRisks(risks, async (q) => {
      asked.push(q);
      return "no";
    });
    await expect(refused).rejects.toMatchObject({ rules: ["traffic-shift", "mass-delete"] });
    expect(asked).toHaveLength(1);
  });
});
