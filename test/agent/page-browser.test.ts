/**
 * The agent's status page (src/render/agent-page.ts) as a person sees it in Chromium: one row per stack with its
 * state, a drifted stack's drift, a waiting stack's rule and the command that acknowledges it, and a stack's history
 * with each plan; text from commits is shown, never run; the page loads nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HistoryEntry, StackStatus } from "../../src/model/agent.js";
import { renderAgentIndex, renderAgentStack } from "../../src/render/agent-page.js";
import { renderAgentStackText, renderAgentStatusTable } from "../../src/render/agent-status.js";
import { startBrowser, type Browser } from "../helpers/browser.js";

const NOW = "2026-11-28T10:00:00Z";
const rev = (sha: string, subject: string) => ({ sha: sha.repeat(40).slice(0, 40), author: "Ann <ann@example.com>", subject, at: NOW });

function stack(name: string, over: Partial<StackStatus>, ready: "True" | "False", reason: string, message: string): StackStatus {
  return {
    name,
    source: "routing",
    mode: "correct",
    suspended: false,
    conditions: [
      { type: "Ready", status: ready, reason, message, since: NOW },
      { type: "Reconciling", status: "False", reason, message: "", since: NOW },
      { type: "Stalled", status: "False", reason: "Progressing", message: "", since: NOW },
    ],
    last_applied_revision: rev("a", "first routing"),
    last_attempted_revision: rev("b", "shift"),
    drift: [],
    drift_since: null,
    waiting: [],
    rollouts: [],
    last_reconciled_at: NOW,
    failures: 0,
    ...over,
  };
}

const STACKS: StackStatus[] = [
  stack(
    "prod",
    {
      waiting: [
        {
          rule: "traffic-shift",
          level: "ack",
          message: "moves 80% of api's traffic",
          digest: "c".repeat(64),
          command: "edgeplan agent ack prod traffic-shift --digest cccccccccccc",
        },
      ],
    },
    "False",
    "WaitingForPerson",
    "waits for a person: traffic-shift",
  ),
  stack(
    "staging",
    { mode: "warn", drift: [{ address: "weighted_backend.api", action: "update", detail: "differs in backends" }], drift_since: NOW },
    "False",
    "DriftDetected",
    "1 change not applied (mode warn)",
  ),
  stack(
    "web",
    { last_applied_revision: rev("d", '"><img src=x onerror=alert(1)><script>alert(2)</script>') },
    "True",
    "ReconciliationSucceeded",
    "the live state matches the manifests",
  ),
];

const HISTORY: HistoryEntry[] = [
  {
    seq: 7,
    stack: "prod",
    started_at: NOW,
    finished_at: NOW,
    trigger: "commit",
    revision: rev("b", "shift"),
    result: "waiting",
    message: "waits for a person: traffic-shift",
    digest: "c".repeat(64),
    plan_text: "~ weighted_backend.api will be updated in place\n<b>not bold</b>",
    report: null,
  },
  {
    seq: 6,
    stack: "prod",
    started_at: NOW,
    finished_at: NOW,
    trigger: "interval",
    revision: rev("a", "first routing"),
    result: "in_sync",
    message: "the live state matches the manifests",
    digest: null,
    plan_text: null,
    report: null,
  },
];

let browser: Browser;
beforeAll(async () => {
  browser = await startBrowser();
});
afterAll(async () => {
  await browser?.close();
});

describe("the agent's page in Chromium", () => {
  it("shows every stack, the drifted one's drift, the waiting one's rule and command; runs nothing from a commit", async () => {
    const page = await browser.page();
    const errors: string[] = [];
    const requests: string[] = [];
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("dialog", (d) => errors.push(`dialog ${d.message()}`));
    page.on("request", (r) => requests.push(r.url()));
    await page.setContent(renderAgentIndex(STACKS, { now: NOW }));
    expect(await page.locator("#stacks tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-stack")))).toEqual(["prod", "staging", "web"]);
    const prod = page.locator('tr[data-stack="prod"]');
    expect(await prod.getAttribute("class")).toBe("ready-false waiting");
    expect(await prod.locator(".waiting-list code").innerText()).toBe("edgeplan agent ack prod traffic-shift --digest cccccccccccc");
    const staging = page.locator('tr[data-stack="staging"]');
    expect(await staging.getAttribute("class")).toBe("ready-false drift");
    expect(await staging.locator(".drift-list li").innerText()).toBe("weighted_backend.api update: differs in backends");
    expect(await page.locator('tr[data-stack="web"] td').nth(2).innerText()).toContain('"><img src=x onerror=alert(1)><script>alert(2)</script>');
    expect(await page.locator("img, script").count()).toBe(0);
    expect(errors).toEqual([]);
    expect(requests.filter((u) => !u.startsWith("about:") && !u.startsWith("data:"))).toEqual([]);
  });

  it("a stack's page holds its history, each plan in a details block", async () => {
    const page = await browser.page();
    await page.setContent(renderAgentStack(STACKS[0] as StackStatus, HISTORY, { now: NOW }));
    expect(await page.locator("#history tbody tr").evaluateAll((rows) => rows.map((r) => r.id))).toEqual(["h-7", "h-6"]);
    await page.locator("#h-7 details summary").click();
    expect(await page.locator("#h-7 details pre").innerText()).toBe("~ weighted_backend.api will be updated in place\n<b>not bold</b>");
    expect(await page.locator("#h-6 details").count()).toBe(0);
  });
});

describe("agent status as text", () => {
  it("one aligned line per stack, the message of Ready (or of Stalled)", () => {
    expect(renderAgentStatusTable(STACKS)).toBe(
      [
        "NAME     MODE     REVISION      READY  SUSPENDED  MESSAGE",
        "prod     correct  aaaaaaaaaaaa  False  False      waits for a person: traffic-shift",
        "staging  warn     aaaaaaaaaaaa  False  False      1 change not applied (mode warn)",
        "web      correct  dddddddddddd  True   False      the live state matches the manifests",
        "",
      ].join("\n"),
    );
  });

  it("shows a commit's escape sequences and control characters as \\xHH, never as they are", () => {
    const hostile = { ...rev("e", "\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007\r"), author: "Eve\u001b[2J" };
    const s = stack("web", { last_applied_revision: hostile, last_attempted_revision: hostile }, "False", "ApplyFailed", "bad\u001b[31m red\tword");
    const text = renderAgentStackText(s, []) + renderAgentStatusTable([s]);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must not be left
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(text).toContain('Last applied revision:   eeeeeeeeeeee "\\x1b]8;;https://evil.example\\x07click\\x1b]8;;\\x07\\x0d" by Eve\\x1b[2J');
    expect(text).toContain("web   correct  eeeeeeeeeeee  False  False      bad\\x1b[31m red\\x09word");
  });
});
