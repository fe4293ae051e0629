/**
 * What a wait for the stack's lease says (src/apply/lease.ts): who holds it, until when, and the `unlock` command,
 * when the wait starts and again every reminder period; a holder that is a dead process of this host is said to be
 * dead. In-process: a stub of the API's weighted backends, and a clock that the wait's sleeps move, so every time in
 * the text is exact.
 */
import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import type { ApiClient, Sent } from "../../src/api/client.js";
import { acquireLease, ExpiryWatch, type LeaseOptions } from "../../src/apply/lease.js";
import { buildLeaseBody, CLAIM_LEASE_KEY } from "../../src/apply/lease-record.js";
import type { LeaseHolder } from "../../src/model/lease.js";
import type { WeightedBackendBody } from "../../src/model/plan.js";
import type { WeightedBackend } from "../../src/model/wire.js";

const T0 = Date.parse("2026-03-01T12:00:00Z");
const HOLDER_ID = "bkdwd_000";

/** The weighted backends of one account, in memory: ids sort in creation order, as the server's do. */
function stubApi(holder: LeaseHolder, ttlMs: number): ApiClient {
  const objects = new Map<string, WeightedBackend>();
  const put = (id: string, body: WeightedBackendBody): WeightedBackend => {
    const wb = { id, uri: "", created_at: "2026-03-01T12:00:00Z", ...body };
    objects.set(id, wb);
    return wb;
  };
  put(HOLDER_ID, buildLeaseBody("web", holder, ttlMs, 4));
  let next = 1;
  const api = {
    async send(r: { method: string; path: string; body: WeightedBackendBody | null }): Promise<Sent> {
      const id = r.path.split("/").pop() as string;
      if (r.method === "POST") return { kind: "weighted_backend", object: put(`bkdwd_${String(next++).padStart(3, "0")}`, r.body as WeightedBackendBody) };
      if (r.method === "PATCH") return { kind: "weighted_backend", object: put(id, r.body as WeightedBackendBody) };
      objects.delete(id);
      return { kind: "weighted_backend", object: null };
    },
    async listWeightedBackends() {
      return [...objects.values()];
    },
    async getWeightedBackend(id: string) {
      return objects.get(id) ?? null;
    },
  };
  return api as unknown as ApiClient;
}

/** Takes the lease of stack "web" held by `holder` (never renewed), on a clock that only the wait's sleeps move. */
async function waitLines(holder: LeaseHolder, extra: Partial<LeaseOptions> = {}): Promise<string[]> {
  let t = T0;
  const lines: string[] = [];
  const me: LeaseHolder = { host: "me", pid: 1, started_at: "2026-03-01T12:00:00Z", token: "me" };
  const lease = await acquireLease(stubApi(holder, 60_000), {
    stack: "web",
    ttlMs: 60_000,
    timeoutMs: 300_000,
    holder: me,
    onWait: (line) => lines.push(line),
    now: () => t,
    sleep: async (ms) => {
      t += ms;
    },
    ...extra,
  });
  await lease.release();
  return lines;
}

/** The pid of a process that ran on this host and has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.on("exit", resolve));
  return child.pid as number;
}

describe("waiting for the stack's lease", () => {
  it("says who holds it, until when and how to remove it, then again every 30 s, until it expires", async () => {
    const holder = { host: "ci-7", pid: 4242, started_at: "2026-03-01T11:58:00Z", token: "t" };
    const who = `host ci-7, process 4242, started 2026-03-01T11:58:00Z (lease ${HOLDER_ID})`;
    const hint = `if that apply is gone, its lease expires at 2026-03-01T12:01:00Z (1m after its last renewal), or remove it now with: edgeplan unlock web --lease-id ${HOLDER_ID}`;
    expect(await waitLines(holder)).toEqual([
      `stack "web" is locked by ${who}; waiting for it (--lock-timeout 5m); ${hint}`,
      `still waiting (30s of --lock-timeout 5m): stack "web" is locked by ${who}; ${hint}`,
      `the lease of ${who} expired (no renewal for 1m); removed it`,
    ]);
  });

  it("says that a holder which is a dead process of this host is no longer running, and still waits for its lease to expire", async () => {
    const pid = await deadPid();
    const holder = { host: hostname(), pid, started_at: "2026-03-01T11:58:00Z", token: "t" };
    const who =
      `host ${hostname()}, process ${pid}, started 2026-03-01T11:58:00Z (lease ${HOLDER_ID}) (process ${pid} on this host is no longer running; ` +
      `the lease expires at 2026-03-01T12:01:00Z, or run: edgeplan unlock web --lease-id ${HOLDER_ID})`;
    expect(await waitLines(holder, { remindMs: 20_000 })).toEqual([
      `stack "web" is locked by ${who}; waiting for it (--lock-timeout 5m)`,
      `still waiting (20s of --lock-timeout 5m): stack "web" is locked by ${who}`,
      `still waiting (40s of --lock-timeout 5m): stack "web" is locked by ${who}`,
      `the lease of host ${hostname()}, process ${pid}, started 2026-03-01T11:58:00Z (lease ${HOLDER_ID}) expired (no renewal for 1m); removed it`,
    ]);
  });

  it("says the same of a dead holder when --lock-timeout 0 gives up at once", async () => {
    const pid = await deadPid();
    const holder = { host: hostname(), pid, started_at: "2026-03-01T11:58:00Z", token: "t" };
    await expect(waitLines(holder, { timeoutMs: 0 })).rejects.toThrow(
      `stack "web" is locked by another apply: host ${hostname()}, process ${pid}, started 2026-03-01T11:58:00Z (lease ${HOLDER_ID}) ` +
        `(process ${pid} on this host is no longer running; the lease expires 1m after its last renewal, or run: edgeplan unlock web --lease-id ${HOLDER_ID}); ` +
        "--lock-timeout 0: not waiting. No change was sent. Run again once its lease has expired (or with a longer --lock-timeout)",
    );
  });

  it("a dead holder's claim lease, seen while the apply waited for the stack's, has expired by the time the claim is taken", async () => {
    const holder = { host: "ci-7", pid: 4242, started_at: "2026-03-01T11:58:00Z", token: "t" };
    const me: LeaseHolder = { host: "me", pid: 1, started_at: "2026-03-01T12:00:00Z", token: "me" };
    /** Takes the stack's lease, then the claim lease: how long (on the clock) the claim took, and its lines. */
    const run = async (shared: boolean): Promise<{ claimMs: number; lines: string[] }> => {
      let t = T0;
      const lines: string[] = [];
      const api = stubApi(holder, 60_000);
      await api.send({ method: "POST", path: "/backends/weighted", body: buildLeaseBody(CLAIM_LEASE_KEY, holder, 15_000, 3) });
      const sleep = async (ms: number): Promise<void> => {
        t += ms;
      };
      const clock = { now: () => t, sleep, onWait: (line: string) => lines.push(line) };
      const watch = shared ? new ExpiryWatch(clock.now) : undefined;
      const stack = await acquireLease(api, { stack: "web", ttlMs: 60_000, timeoutMs: 300_000, holder: me, ...clock, ...(watch ? { watch } : {}) });
      const before = t;
      lines.length = 0;
      const claim = await acquireLease(api, {
        stack: CLAIM_LEASE_KEY,
        subject: "module ownership (the account's claim lease)",
        ttlMs: 15_000,
        timeoutMs: 300_000,
        holder: me,
        firstPollMs: 25,
        pollMs: 1000,
        ...clock,
        ...(watch ? { watch } : {}),
      });
      const claimMs = t - before;
      await claim.release();
      await stack.release();
      return { claimMs, lines };
    };
    const expired = "the lease of host ci-7, process 4242, started 2026-03-01T11:58:00Z (lease bkdwd_001) expired (no renewal for 15s); removed it";
    const together = await run(true);
    expect(together.claimMs).toBe(25);
    expect(together.lines.at(-1)).toBe(expired);
    const apart = await run(false);
    expect(apart.claimMs).toBeGreaterThanOrEqual(15_000);
    expect(apart.lines.at(-1)).toBe(expired);
  });
});
