/**
 * The agent's notifications (docs/agent.md): a generic webhook (JSON, HMAC-SHA256 signed when it has a secret), a
 * Slack-compatible incoming webhook, and a GitHub commit status. The same event is never sent twice in a row for a
 * stack and notifier: the store's compare-and-set decides, so of two replicas only one sends. A failure is logged by
 * the notifier's name (never its URL or secret), retried twice, and never stops a reconciliation; an event not
 * delivered is given back, and sent when a later reconciliation reports it again.
 */
import { createHmac } from "node:crypto";
import type { AgentEvent, AgentNotification, Revision } from "../model/agent.js";
import { isLoopbackHost } from "../model/syntax.js";
import { readSecret } from "./accounts.js";
import type { AgentStore } from "./store.js";

/** What happened to a stack, for the notifiers. */
export interface StackEvent {
  stack: string;
  event: AgentEvent;
  revision: Revision | null;
  message: string;
  changes: string[];
  url?: string;
  at: string;
}

interface Delivery {
  url: string;
  headers: Record<string, string>;
  body: string;
}

const ATTEMPTS = 3;
const SHOWN_CHANGES = 20;
const ICON: Record<AgentEvent, string> = {
  applied: ":white_check_mark:",
  recovered: ":white_check_mark:",
  drift_corrected: ":wrench:",
  drift_detected: ":warning:",
  waiting: ":hourglass:",
  failed: ":x:",
};
const GITHUB_STATE: Record<AgentEvent, string> = {
  applied: "success",
  recovered: "success",
  drift_corrected: "success",
  drift_detected: "failure",
  waiting: "pending",
  failed: "failure",
};

export class Notifier {
  constructor(
    private readonly configs: AgentNotification[],
    private readonly deps: {
      env: Record<string, string | undefined>;
      store: Pick<AgentStore, "swapEvent" | "lastEvent">;
      log: (line: string) => void;
      fetch?: typeof fetch;
      timeoutMs?: number;
    },
  ) {}

  /** Sends `e` to every notifier that wants it, once per change of event. Never throws. */
  async notify(e: StackEvent): Promise<void> {
    await Promise.all(this.configs.filter((c) => c.events.includes(e.event) && (!c.stacks || c.stacks.includes(e.stack))).map((c) => this.send(c, e)));
  }

  private async send(config: AgentNotification, e: StackEvent): Promise<void> {
    try {
      if (config.type === "github" && e.revision === null) return;
      const last = await this.deps.store.lastEvent(e.stack, config.name);
      if (last === e.event || !(await this.deps.store.swapEvent(e.stack, config.name, last, e.event))) return;
      try {
        await this.post(await this.deliveryOf(config, e));
      } catch (err) {
        // Not sent: the event is given back, so that the next reconciliation that reports it sends it.
        await this.deps.store.swapEvent(e.stack, config.name, e.event, last);
        throw err;
      }
    } catch (err) {
      this.deps.log(`notification ${config.name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async deliveryOf(config: AgentNotification, e: StackEvent): Promise<Delivery> {
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "edgeplan-agent" };
    const what = `notification ${config.name}`;
    if (config.type === "github") {
      const token = await readSecret(config.token as NonNullable<AgentNotification["token"]>, this.deps.env, `${what}: the token`);
      const base = (config.url || "https://api.github.com").replace(/\/+$/, "");
      const body = { state: GITHUB_STATE[e.event], context: `edgeplan/${e.stack}`, description: e.message.slice(0, 140), ...(e.url ? { target_url: e.url } : {}) };
      return {
        url: `${base}/repos/${config.repository}/statuses/${(e.revision as Revision).sha}`,
        headers: { ...headers, authorization: `Bearer ${token}`, accept: "application/vnd.github+json" },
        body: JSON.stringify(body),
      };
    }
    if (config.type === "slack") {
      const url = config.secret ? await readSecret(config.secret, this.deps.env, `${what}: the URL`) : config.url;
      return { url, headers, body: JSON.stringify({ text: slackText(e) }) };
    }
    const body = JSON.stringify({
      stack: e.stack,
      event: e.event,
      revision: e.revision,
      message: e.message,
      changes: e.changes.slice(0, SHOWN_CHANGES),
      url: e.url ?? null,
      at: e.at,
    });
    if (config.secret) {
      const secret = await readSecret(config.secret, this.deps.env, `${what}: the secret`);
      headers["x-edgeplan-signature-256"] = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
    }
    return { url: config.url, headers, body };
  }

  /** POSTs, retrying a failure or a 5xx twice; plain http only to loopback. */
  private async post(d: Delivery): Promise<void> {
    const parsed = new URL(d.url);
    if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && isLoopbackHost(parsed.hostname)))
      throw new Error("the URL must be https:// (http:// only to loopback)");
    const send = this.deps.fetch ?? fetch;
    let why = "";
    let tries = 0;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      tries = attempt;
      try {
        // A redirect is not followed: it would take the body, its signature or the token to an address not configured.
        const signal = AbortSignal.timeout(this.deps.timeoutMs ?? 10_000);
        const res = await send(d.url, { method: "POST", headers: d.headers, body: d.body, signal, redirect: "manual" });
        await res.text().catch(() => "");
        if (res.ok) return;
        why = res.status >= 300 && res.status < 400 ? `answered ${res.status}, a redirect, which is not followed` : `answered ${res.status}`;
        if (res.status < 500 && res.status !== 429) break;
      } catch (err) {
        why = err instanceof Error && err.name === "TimeoutError" ? "no answer within the timeout" : "no answer";
      }
    }
    throw new Error(`not delivered after ${tries === 1 ? "1 try" : `${tries} tries`} (${why}); it is sent again when a reconciliation reports it again`);
  }
}

/**
 * The Slack text: what a commit or a manifest says (subject, author, message, addresses) is escaped as Slack asks
 * (`&`, `<`, `>`), so that `<!channel>` or `<https://x|click>` in a commit subject is shown, never a ping or a link.
 */
function slackText(e: StackEvent): string {
  const esc = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const rev = e.revision ? ` ${e.revision.sha.slice(0, 7)} "${esc(e.revision.subject)}" by ${esc(e.revision.author)}` : "";
  const changes = e.changes
    .slice(0, SHOWN_CHANGES)
    .map((c) => `\n• ${esc(c)}`)
    .join("");
  const more = e.changes.length > SHOWN_CHANGES ? `\n… and ${e.changes.length - SHOWN_CHANGES} more` : "";
  return `${ICON[e.event]} ${e.stack} ${e.event.replace("_", " ")}${rev}: ${esc(e.message)}${changes}${more}`;
}
