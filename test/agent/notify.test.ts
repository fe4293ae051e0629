/**
 * The agent's notifications (src/agent/notify.ts) against receivers made here on loopback: the exact body and
 * headers of each kind, the webhook's HMAC, the GitHub status on the commit, the same event never twice in a row,
 * a failing receiver retried, and no secret in any log line.
 */
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Notifier, type StackEvent } from "../../src/agent/notify.js";
import { openAgentStore, type AgentStore } from "../../src/agent/store.js";
import type { AgentNotification } from "../../src/model/agent.js";

interface Got {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let server: Server;
let base = "";
const got: Got[] = [];
let failNext = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      got.push({ path: req.url ?? "", headers: req.headers, body });
      if (req.url === "/redirect") {
        res.writeHead(307, { location: "/landed" }).end();
        return;
      }
      res.statusCode = failNext-- > 0 ? 500 : 201;
      res.end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => server.close());

const ALL = ["applied", "failed", "drift_detected", "drift_corrected", "waiting", "recovered"] as AgentNotification["events"];
const revision = { sha: "3f1c2a9e0b7d11112222333344445555aaaabbbb", author: "Ann", subject: "shift prod", at: "2026-11-28T10:00:00Z" };
const event = (e: StackEvent["event"], message = "Apply complete: 1 done."): StackEvent => ({
  stack: "prod",
  event: e,
  revision,
  message,
  changes: ["weighted_backend.api: update"],
  at: "2026-11-28T10:01:00Z",
});

async function notifier(configs: AgentNotification[], env: Record<string, string>): Promise<{ n: Notifier; logs: string[]; store: AgentStore }> {
  const store = await openAgentStore({});
  const logs: string[] = [];
  return { n: new Notifier(configs, { env, store, log: (l) => logs.push(l), timeoutMs: 2000 }), logs, store };
}

describe("notifications", () => {
  it("webhook: the JSON body signed with HMAC-SHA256; slack: one text; github: the commit's status; each once per event", async () => {
    got.length = 0;
    const secret = "canary-webhook-secret-1";
    const { n, logs } = await notifier(
      [
        { name: "ops", type: "webhook", url: `${base}/events`, secret: { env: "SECRET" }, events: ALL },
        { name: "chat", type: "slack", url: "", secret: { env: "SLACK_URL" }, events: ["failed"] },
        { name: "gh", type: "github", url: base, token: { env: "GH" }, repository: "acme/routing", events: ALL },
      ],
      { SECRET: secret, SLACK_URL: `${base}/slack/T000/canary-slack-path`, GH: "canary-gh-token" },
    );
    await n.notify(event("applied"));
    await n.notify(event("applied"));
    const hook = got.find((g) => g.path === "/events") as Got;
    expect(JSON.parse(hook.body)).toEqual({
      stack: "prod",
      event: "applied",
      revision,
      message: "Apply complete: 1 done.",
      changes: ["weighted_backend.api: update"],
      url: null,
      at: "2026-11-28T10:01:00Z",
    });
    expect(hook.headers["x-edgeplan-signature-256"]).toBe(`sha256=${createHmac("sha256", secret).update(hook.body).digest("hex")}`);
    const status = got.find((g) => g.path.startsWith("/repos/")) as Got;
    expect(status.path).toBe(`/repos/acme/routing/statuses/${revision.sha}`);
    expect(status.headers.authorization).toBe("Bearer canary-gh-token");
    expect(JSON.parse(status.body)).toEqual({ state: "success", context: "edgeplan/prod", description: "Apply complete: 1 done." });
    // Twice the same event: sent once to each notifier that wants it (slack wants only failures).
    expect(got.map((g) => g.path.split("/")[1]).sort()).toEqual(["events", "repos"]);
    await n.notify(event("failed", "no answer from the API"));
    const slack = got.find((g) => g.path.startsWith("/slack")) as Got;
    expect(JSON.parse(slack.body)).toEqual({ text: ':x: prod failed 3f1c2a9 "shift prod" by Ann: no answer from the API\n• weighted_backend.api: update' });
    await n.notify(event("applied"));
    expect(got.filter((g) => g.path === "/events").map((g) => JSON.parse(g.body).event)).toEqual(["applied", "failed", "applied"]);
    expect(logs).toEqual([]);
  });

  it("a receiver that fails is tried again; one that keeps failing is logged by name, never by URL or secret", async () => {
    got.length = 0;
    const { n, logs } = await notifier([{ name: "chat", type: "slack", url: "", secret: { env: "SLACK_URL" }, events: ALL }], {
      SLACK_URL: `${base}/slack/canary-slack-path`,
    });
    failNext = 1;
    await n.notify(event("waiting", "waits for traffic-shift"));
    expect(got.length).toBe(2);
    failNext = 3;
    await n.notify(event("applied"));
    expect(logs).toEqual(["notification chat: not delivered after 3 tries (answered 500); it is sent again when a reconciliation reports it again"]);
    expect(logs.join("\n")).not.toContain("canary");
    // Not delivered, so not "sent": the same event reported again goes out, once.
    got.length = 0;
    await n.notify(event("applied"));
    await n.notify(event("applied"));
    expect(got.map((g) => JSON.parse(g.body).text)).toEqual([
      ':white_check_mark: prod applied 3f1c2a9 "shift prod" by Ann: Apply complete: 1 done.\n• weighted_backend.api: update',
    ]);
  });

  it("slack: a commit's words are shown, never a ping or a link; a redirect is not followed", async () => {
    got.length = 0;
    const { n, logs } = await notifier(
      [
        { name: "chat", type: "slack", url: "", secret: { env: "SLACK_URL" }, events: ALL },
        { name: "moved", type: "webhook", url: `${base}/redirect`, secret: { env: "SECRET" }, events: ALL },
      ],
      { SLACK_URL: `${base}/slack/x`, SECRET: "canary-secret" },
    );
    const hostile = { ...revision, subject: "<!channel> & <https://evil.example|click>", author: "<@U123>" };
    await n.notify({ ...event("failed", "bad <b>"), revision: hostile });
    const slack = got.find((g) => g.path === "/slack/x") as Got;
    expect(JSON.parse(slack.body).text).toBe(
      ':x: prod failed 3f1c2a9 "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" by &lt;@U123&gt;: bad &lt;b&gt;\n• weighted_backend.api: update',
    );
    expect(got.filter((g) => g.path.startsWith("/landed"))).toEqual([]);
    expect(logs).toEqual([
      "notification moved: not delivered after 1 try (answered 307, a redirect, which is not followed); it is sent again when a reconciliation reports it again",
    ]);
  });
});
