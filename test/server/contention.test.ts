/**
 * A transaction that loses races runs again within a time budget, then gives up as contended (contention.ts); the
 * pipeline answers that 503 with Retry-After, and the request changed nothing. The end-to-end case holds the SQLite
 * file's write lock from another connection, as another program would.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { retryLostRaces, StoreContentionError } from "../../src/server/contention.js";
import { sample } from "../helpers/metrics.js";
import { apiClient, startTestServer, TEST_STORE } from "../helpers/server.js";

class Lost extends Error {
  code = "40P01";
}

/** A clock that only moves when the retry loop sleeps, and the waits it slept. */
function virtualClock(): { now: () => number; sleep: (ms: number) => Promise<void>; waits: number[] } {
  let t = 0;
  const waits: number[] = [];
  return {
    now: () => t,
    sleep: async (ms) => {
      waits.push(ms);
      t += ms;
    },
    waits,
  };
}

describe("retryLostRaces", () => {
  it("runs an attempt that lost races again, after short jittered waits, until it succeeds", async () => {
    const clock = virtualClock();
    let attempts = 0;
    const result = await retryLostRaces(
      async () => {
        if (++attempts < 4) throw new Lost("deadlock detected");
        return "done";
      },
      (err) => err instanceof Lost,
      { ...clock, random: () => 0.5 },
    );
    expect(result).toBe("done");
    expect(attempts).toBe(4);
    expect(clock.waits).toEqual([2.5, 5, 10]);
  });

  it("gives up past the budget with StoreContentionError naming the attempts and the last loss", async () => {
    const clock = virtualClock();
    let attempts = 0;
    const run = retryLostRaces(
      async () => {
        attempts++;
        throw new Lost("deadlock detected");
      },
      (err) => err instanceof Lost,
      { ...clock, random: () => 0.999, budgetMs: 500 },
    );
    await expect(run).rejects.toThrow(StoreContentionError);
    const err = (await run.catch((e: unknown) => e)) as StoreContentionError;
    expect(err.attempts).toBe(attempts);
    expect(err.cause).toBeInstanceOf(Lost);
    expect(err.message).toMatch(new RegExp(`^the transaction lost ${attempts} races with concurrent ones in \\d+ ms \\(last: deadlock detected\\)$`));
    expect(clock.now()).toBeLessThan(500);
    expect(attempts).toBeGreaterThan(5);
    expect(Math.max(...clock.waits)).toBeLessThan(100);
  });

  it("tells its observer of each lost race, by reason, and how the transaction ended", async () => {
    const told: string[] = [];
    const observer = { lostRace: (reason: string) => told.push(reason), transaction: (seconds: number, outcome: string) => told.push(`${outcome} after ${seconds} s`) };
    let attempts = 0;
    const attempt = async (): Promise<string> => {
      if (++attempts < 3) throw new Lost("deadlock detected");
      return "done";
    };
    await retryLostRaces(attempt, (err) => err instanceof Lost, { ...virtualClock(), random: () => 0.5, observer, raceReason: () => "deadlock" });
    expect(told).toEqual(["deadlock", "deadlock", "committed after 0.0075 s"]);
    told.length = 0;
    const refused = retryLostRaces(
      async () => {
        throw new Error("invalid");
      },
      (err) => err instanceof Lost,
      { observer },
    );
    await expect(refused).rejects.toThrow("invalid");
    expect(told).toEqual([expect.stringMatching(/^rolled_back after [\d.e-]+ s$/)]);
  });

  it("rethrows any other error at once, without running the attempt again", async () => {
    let attempts = 0;
    const boom = new Error("syntax error");
    await expect(
      retryLostRaces(
        async () => {
          attempts++;
          throw boom;
        },
        (err) => err instanceof Lost,
      ),
    ).rejects.toBe(boom);
    expect(attempts).toBe(1);
  });
});

describe.skipIf(TEST_STORE === "postgres")("a store that stays contended past the budget", () => {
  it("answers 503 ERR_NGROK_503 with Retry-After: 1, logs why, and the write changed nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "edgeplan-contention-"));
    const s = await startTestServer({ dataFile: join(dir, "store.db"), metrics: true });
    const other = new Database(join(dir, "store.db"));
    try {
      const api = apiClient(s.url, s.apiKey);
      const id = (await api.post("/backends/weighted", { backends: {}, description: "before" })).json.id as string;
      other.exec("BEGIN IMMEDIATE");
      const refused = await api.patch(`/backends/weighted/${id}`, { backends: {}, description: "during" });
      other.exec("ROLLBACK");
      expect(refused.status).toBe(503);
      expect(refused.headers["retry-after"]).toBe("1");
      expect(refused.json).toEqual({
        error_code: "ERR_NGROK_503",
        status_code: 503,
        msg: "the server is busy with concurrent changes to the same objects and did not carry out this request (nothing was changed); send it again after 1 s",
        details: { operation_id: refused.headers["ngrok-operation-id"] },
      });
      const line = s.logLines.find((l) => l.operation_id === refused.headers["ngrok-operation-id"]);
      expect(line?.status).toBe(503);
      expect(line?.error).toMatch(/^the transaction lost \d+ races? with concurrent ones in \d+ ms \(last: database is locked\)$/);
      const lost = Number(/lost (\d+) race/.exec(line?.error as string)?.[1]);
      const metrics = (await api.get("/metrics")).text;
      expect(sample(metrics, "edgeplan_store_lost_races_total", { reason: "database_busy" })).toBe(lost);
      expect(sample(metrics, "edgeplan_store_transaction_duration_seconds_count", { outcome: "contended" })).toBe(1);
      expect(sample(metrics, "edgeplan_http_requests_total", { route: "/backends/weighted/{id}", method: "PATCH", status: "503" })).toBe(1);
      expect((await api.get(`/backends/weighted/${id}`)).json.description).toBe("before");
      expect((await api.patch(`/backends/weighted/${id}`, { backends: {}, description: "after" })).status).toBe(200);
      expect((await api.get(`/backends/weighted/${id}`)).json.description).toBe("after");
    } finally {
      other.close();
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);
});
