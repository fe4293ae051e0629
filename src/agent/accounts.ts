/**
 * The API accounts the agent's stacks live on: one client per account (API URL and key), so that the stacks of an
 * account share one rate budget, and one listing per reconciliation cycle. The key is read from its file or
 * variable at each cycle (a rotated key takes effect without a restart) and never kept anywhere but the client.
 */
import { readFile } from "node:fs/promises";
import { apiIdentity } from "../api/account.js";
import { ApiClock } from "../api/api-clock.js";
import { createClient, type ClientStats } from "../api/client.js";
import { edgePageSource, startListing, type Listings } from "../api/fetch-live.js";
import { clientOptionsFrom, type CommonCliOptions } from "../api/options.js";
import { Reachability } from "../api/reachability.js";
import type { Session } from "../commands/session.js";
import { digestOf } from "../model/canonical.js";
import type { SecretRef } from "../model/agent.js";
import { EdgeplanError, fileErrorReason } from "../model/errors.js";

/** An open account: its session (one client) and the stats already counted in the metrics. */
interface Account {
  session: Promise<Session>;
  counted: ClientStats["byStatus"];
}

/** Reads a secret from its file or variable; an EdgeplanError naming where, never the value. */
export async function readSecret(ref: SecretRef, env: Record<string, string | undefined>, what: string): Promise<string> {
  if ("env" in ref) {
    const value = env[ref.env];
    if (!value) throw new EdgeplanError(`${what}: the environment variable ${ref.env} is not set`);
    return value;
  }
  try {
    const value = (await readFile(ref.file, "utf8")).trim();
    if (value === "") throw new EdgeplanError(`${what}: the file ${ref.file} is empty`);
    return value;
  } catch (err) {
    if (err instanceof EdgeplanError) throw err;
    throw new EdgeplanError(`${what}: cannot read ${ref.file} (${fileErrorReason(err)})`);
  }
}

export class Accounts {
  private readonly open = new Map<string, Account>();

  constructor(
    private readonly env: Record<string, string | undefined>,
    /** The client flags of `edgeplan agent` (`--rate-limit`, `--concurrency`, `--timeout`, `--retries`): each account's budget. */
    private readonly flags: CommonCliOptions,
    private readonly onRequests: (byStatus: Record<string, number>) => void,
  ) {}

  /** The session of the account at `apiUrl` with `apiKey` (opened on first use), as a session of `stack`. */
  async sessionFor(apiUrl: string, apiKey: string, stack: string): Promise<Session> {
    const key = digestOf({ apiUrl, apiKey });
    let account = this.open.get(key);
    if (!account) {
      // The promise is kept at once: stacks of one cycle asking together share one client.
      account = { session: openAccount(apiUrl, apiKey, this.flags, this.env), counted: {} };
      this.open.set(key, account);
    }
    return { ...(await account.session), stack, close: async () => undefined };
  }

  /** New listings of an account for one cycle: the weighted backends listed once, the first edge page read when needed. */
  listingsFor(session: Session): Listings {
    return { weightedBackends: startListing(session.client), edges: edgePageSource(session.client) };
  }

  /** Reports the requests sent since the last call (metrics), for every account. */
  async countRequests(): Promise<void> {
    for (const account of this.open.values()) {
      const now = (await account.session).client.stats().byStatus;
      const delta: Record<string, number> = {};
      for (const [status, n] of Object.entries(now)) if (n > (account.counted[status] ?? 0)) delta[status] = n - (account.counted[status] ?? 0);
      account.counted = now;
      if (Object.keys(delta).length > 0) this.onRequests(delta);
    }
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open.values()].map(async (a) => (await a.session).client.close()));
    this.open.clear();
  }
}

/**
 * The account's session. Its client keeps no Reachability: a run of the CLI stops for good once the API stops
 * answering, but the agent's next cycle must try again.
 */
async function openAccount(apiUrl: string, apiKey: string, flags: CommonCliOptions, env: Record<string, string | undefined>): Promise<Session> {
  const reachability = new Reachability();
  const clock = new ApiClock();
  const options = { ...(await clientOptionsFrom(flags, env as NodeJS.ProcessEnv, { baseUrl: apiUrl, apiKey })), apiClock: clock };
  const client = createClient(options);
  return {
    client,
    stack: "",
    concurrency: options.concurrency,
    budget: { rateLimit: options.rateLimit, concurrency: options.concurrency },
    reachability,
    clock,
    api: apiIdentity(client.baseUrl, apiKey),
    close: () => client.close(),
  };
}
