/**
 * A lease create whose answer was lost may commit later than the listing that looked for it (a slow server holds the
 * request past the client's timeout), so the taker creates another and the first becomes an orphan of its own. The
 * taker never waits for its own orphans, and no lease object of it is left once it releases (src/apply/lease.ts).
 * In-process: the weighted backends of one account in memory, ids in commit order as the server's are.
 */
import { describe, expect, it } from "vitest";
import type { ApiClient, Sent } from "../../src/api/client.js";
import { OutcomeUnknownError } from "../../src/api/errors.js";
import { acquireLease } from "../../src/apply/lease.js";
import { buildLeaseBody, leasesOf } from "../../src/apply/lease-record.js";
import type { WeightedBackendBody } from "../../src/model/plan.js";
import type { WeightedBackend } from "../../src/model/wire.js";

type Order = "just before the second create" | "just after the second create" | "after the taker's listing";

/**
 * The first POST times out on the client, and the server commits it later than the listing that looks for it: as
 * `order` says, just before or after the second create, or after the listing that decides who holds the lease.
 */
function slowCreateApi(order: Order): { api: ApiClient; objects: Map<string, WeightedBackend> } {
  const objects = new Map<string, WeightedBackend>();
  let next = 1;
  let posts = 0;
  let lists = 0;
  let pending: WeightedBackendBody | null = null;
  const put = (body: WeightedBackendBody): WeightedBackend => {
    const wb = { id: `bkdwd_${String(next++).padStart(3, "0")}`, uri: "", created_at: "2026-03-01T12:00:00Z", ...body };
    objects.set(wb.id, wb);
    return wb;
  };
  const api = {
    async send(r: { method: string; path: string; body: WeightedBackendBody | null }): Promise<Sent> {
      const id = r.path.split("/").pop() as string;
      if (r.method === "POST") {
        posts++;
        if (posts === 1) {
          pending = r.body;
          throw new OutcomeUnknownError("POST", r.path, 0, undefined, "no answer within the timeout (TIMEOUT)", undefined);
        }
        if (order === "just before the second create" && pending) put(pending);
        const mine = put(r.body as WeightedBackendBody);
        if (order === "just after the second create" && pending) put(pending);
        return { kind: "weighted_backend", object: mine };
      }
      if (r.method === "PATCH") {
        const wb = { ...(objects.get(id) as WeightedBackend), ...(r.body as WeightedBackendBody) };
        objects.set(id, wb);
        return { kind: "weighted_backend", object: wb };
      }
      objects.delete(id);
      return { kind: "weighted_backend", object: null };
    },
    async listWeightedBackends() {
      const snapshot = [...objects.values()];
      // The first listing looks for the lost create; the second is the taker's.
      if (++lists === 2 && order === "after the taker's listing" && pending) put(pending);
      return snapshot;
    },
    async getWeightedBackend(id: string) {
      return objects.get(id) ?? null;
    },
  };
  return { api: api as unknown as ApiClient, objects };
}

describe("a lease create whose answer was lost", () => {
  const orders: Order[] = ["just before the second create", "just after the second create", "after the taker's listing"];
  for (const order of orders) {
    it(`committed ${order}: the taker holds the lease at once and leaves no lease object after release`, async () => {
      const { api, objects } = slowCreateApi(order);
      const waits: string[] = [];
      const lease = await acquireLease(api, {
        stack: "web",
        ttlMs: 60_000,
        timeoutMs: 0,
        holder: { host: "me", pid: 1, started_at: "2026-03-01T12:00:00Z", token: "me" },
        onWait: (line) => waits.push(line),
      });
      expect(waits).toEqual([]);
      expect(leasesOf([...objects.values()], "web").map((l) => l.id)).toContain(lease.id);
      expect(await lease.release()).toBeNull();
      expect([...objects.keys()]).toEqual([]);
    });
  }
});

describe("lease objects never renewed whose TTL has passed on the API's clock", () => {
  it("are removed by the next taker (the claim lease's too); a renewed one, or one still within its TTL, is kept", async () => {
    const { api, objects } = slowCreateApi("just before the second create");
    const holder = (token: string) => ({ host: "h", pid: 2, started_at: "2026-03-01T11:00:00Z", token });
    const put = (id: string, stack: string, renewals: number, created: string) => {
      objects.set(id, { id, uri: "", created_at: created, ...buildLeaseBody(stack, holder(id), 2000, renewals) });
    };
    put("bkdwd_a01", "edgeplan:claims", 0, "2026-03-01T12:00:00Z");
    put("bkdwd_a02", "other", 1, "2026-03-01T12:00:00Z");
    put("bkdwd_a03", "other", 0, "2026-03-01T12:00:09Z");
    // At 12:00:10 by the API: a01 (claims, never renewed, 2 s TTL, created 10 s ago) holds nothing.
    const lease = await acquireLease(api, {
      stack: "web",
      ttlMs: 60_000,
      timeoutMs: 0,
      holder: holder("me"),
      onWait: () => undefined,
      apiNow: () => Date.parse("2026-03-01T12:00:10Z"),
    });
    expect([...objects.keys()].filter((id) => id.startsWith("bkdwd_a")).sort()).toEqual(["bkdwd_a02", "bkdwd_a03"]);
    await lease.release();
  });
});
