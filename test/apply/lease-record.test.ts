/**
 * The lease object (src/apply/lease-record.ts, read back by src/model/lease.ts): its body, reading it back, who goes first, and how the holder is named.
 */
import { describe, expect, it } from "vitest";
import { buildLeaseBody, ciRunUrl, describeHolder, leaseBlocker, leasesOf } from "../../src/apply/lease-record.js";
import { isLeaseObject, parseLease, type LeaseHolder } from "../../src/model/lease.js";
import { lockBudgetWarning, lockOptionsFrom } from "../../src/commands/apply.js";
import { DEFAULT_BUDGET } from "../../src/core/estimate.js";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runEdgeplan, tempDir } from "../reliability/cli.js";

const HOLDER: LeaseHolder = { host: "ci-7", pid: 4242, started_at: "2026-01-02T03:04:05Z", token: "t1" };
const obj = (id: string, stack: string, renewals = 0): { id: string; metadata: string } => ({ id, metadata: buildLeaseBody(stack, HOLDER, 60_000, renewals).metadata });

describe("lease objects", () => {
  it("is a weighted backend without children whose metadata names the stack, the holder, the TTL and the renewals", () => {
    expect(buildLeaseBody("prod", { ...HOLDER, run_url: "https://github.com/a/b/actions/runs/1" }, 60_000, 3)).toEqual({
      description: "edgeplan lease of stack prod: an apply is running (remove a stuck one with: edgeplan unlock prod)",
      metadata:
        '{"edgeplan":{"lease":{"holder":{"host":"ci-7","pid":4242,"run_url":"https://github.com/a/b/actions/runs/1","started_at":"2026-01-02T03:04:05Z","token":"t1"},"renewals":3,"ttl_ms":60000},"stack":"prod"}}',
      backends: {},
    });
    expect(parseLease(obj("bkdwd_b", "prod", 3))).toEqual({ id: "bkdwd_b", stack: "prod", holder: HOLDER, ttlMs: 60_000, renewals: 3 });
  });

  it("records the environment the apply runs in, and names it first when it shows the holder", () => {
    const body = buildLeaseBody("web-production", { ...HOLDER, environment: "production" }, 60_000, 0);
    const lease = parseLease({ id: "bkdwd_e", metadata: body.metadata });
    expect(lease?.holder).toEqual({ ...HOLDER, environment: "production" });
    expect(describeHolder(lease as NonNullable<typeof lease>)).toBe("environment production, host ci-7, process 4242, started 2026-01-02T03:04:05Z (lease bkdwd_e)");
    expect(describeHolder(parseLease(obj("bkdwd_f", "prod")) as NonNullable<ReturnType<typeof parseLease>>)).toBe(
      "host ci-7, process 4242, started 2026-01-02T03:04:05Z (lease bkdwd_f)",
    );
  });

  it("tells lease objects from owned objects, foreign objects and user metadata that mentions a lease", () => {
    expect(isLeaseObject(obj("bkdwd_a", "prod"))).toBe(true);
    expect(isLeaseObject({ id: "x", metadata: '{"edgeplan":{"name":"web","stack":"prod"}}' })).toBe(false);
    expect(isLeaseObject({ id: "x", metadata: '{"team":{"lease":{"holder":{}}}}' })).toBe(false);
    expect(isLeaseObject({ id: "x", metadata: 'not json "lease":{' })).toBe(false);
    expect(isLeaseObject({ id: "x", metadata: "" })).toBe(false);
  });

  it("the smallest id of the stack that is not known to have expired goes first", () => {
    const leases = leasesOf([obj("bkdwd_c", "prod"), obj("bkdwd_a", "other"), obj("bkdwd_b", "prod"), obj("bkdwd_d", "prod")], "prod");
    expect(leases.map((l) => l.id)).toEqual(["bkdwd_b", "bkdwd_c", "bkdwd_d"]);
    expect(leaseBlocker("bkdwd_b", leases, new Set())).toBeNull();
    expect(leaseBlocker("bkdwd_d", leases, new Set())?.id).toBe("bkdwd_b");
    expect(leaseBlocker("bkdwd_d", leases, new Set(["bkdwd_b"]))?.id).toBe("bkdwd_c");
    expect(leaseBlocker("bkdwd_c", leases, new Set(["bkdwd_b"]))).toBeNull();
  });

  it("names the holder with the CI run URL when GitHub Actions' three variables are set", () => {
    expect(ciRunUrl({ GITHUB_SERVER_URL: "https://github.com/", GITHUB_REPOSITORY: "acme/routes", GITHUB_RUN_ID: "99" })).toBe(
      "https://github.com/acme/routes/actions/runs/99",
    );
    expect(ciRunUrl({ GITHUB_REPOSITORY: "acme/routes", GITHUB_RUN_ID: "99" })).toBeUndefined();
    const lease = parseLease(obj("bkdwd_a", "prod"));
    expect(lease && describeHolder(lease)).toBe("host ci-7, process 4242, started 2026-01-02T03:04:05Z (lease bkdwd_a)");
  });

  it("reads --lock-timeout and --lock-ttl as durations: 0 waits not at all; defaults 5m and 1m", () => {
    expect(lockOptionsFrom({})).toEqual({ timeoutMs: 300_000, ttlMs: 60_000 });
    expect(lockOptionsFrom({ lockTimeout: "0", lockTtl: "2s" })).toEqual({ timeoutMs: 0, ttlMs: 2000 });
    expect(lockOptionsFrom({ lockTimeout: "90s", lockTtl: "1.5m" })).toEqual({ timeoutMs: 90_000, ttlMs: 90_000 });
    expect(() => lockOptionsFrom({ lockTimeout: "5 min" })).toThrow('--lock-timeout: expected milliseconds from 0 to 86400000 (or a duration such as 30s), got "5 min"');
    expect(() => lockOptionsFrom({ lockTtl: "500ms" })).toThrow('--lock-ttl: expected milliseconds from 1000 to 86400000 (or a duration such as 30s), got "500ms"');
  });

  it("warns when renewing the lease alone takes more than half of --rate-limit's requests", () => {
    expect(lockBudgetWarning(1000, DEFAULT_BUDGET.rateLimit)).toBe(
      "warning: --lock-ttl 1s: renewing the lease every 333ms takes 180 of the 120 requests per 1m that --rate-limit allows, and the apply's requests wait behind them; use --lock-ttl 3s or more, or a higher --rate-limit",
    );
    expect(lockBudgetWarning(3000, DEFAULT_BUDGET.rateLimit)).toBeNull();
    expect(lockBudgetWarning(60_000, { count: 10, windowMs: 1000 })).toBeNull();
    expect(lockBudgetWarning(1000, { count: 4, windowMs: 1000 })).toBe(
      "warning: --lock-ttl 1s: renewing the lease every 333ms takes 3 of the 4 requests per 1s that --rate-limit allows, and the apply's requests wait behind them; use --lock-ttl 2s or more, or a higher --rate-limit",
    );
    expect(lockBudgetWarning(2000, { count: 4, windowMs: 1000 })).toBeNull();
    expect(lockBudgetWarning(1000, null)).toBeNull();
  });

  it("judges --lock-ttl by the limit the apply's client keeps: --local has none, so 1s is no warning there", async () => {
    const dir = tempDir("lock-budget");
    try {
      mkdirSync(join(dir.path, "m"));
      writeFileSync(join(dir.path, "m", "a.yaml"), `kind: WeightedBackend\nname: a\nbackends:\n  bkdhr_${"0".repeat(26)}1: 1\n`);
      const local = await runEdgeplan(["apply", "m", "--local", "--auto-approve", "--lock-ttl", "1s"], { cwd: dir.path });
      expect(local.code, local.stderr).toBe(0);
      expect(local.stderr).not.toContain("warning: --lock-ttl");
      const limited = await runEdgeplan(["apply", "m", "--local", "--auto-approve", "--lock-ttl", "1s", "--rate-limit", "120/60s"], { cwd: dir.path });
      expect(limited.stderr.split("\n")).toContain(
        "warning: --lock-ttl 1s: renewing the lease every 333ms takes 180 of the 120 requests per 1m that --rate-limit allows, and the apply's requests wait behind them; use --lock-ttl 3s or more, or a higher --rate-limit",
      );
    } finally {
      dir.remove();
    }
  });
});
