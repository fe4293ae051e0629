/**
 * The agent's store on the project's engine (SQLite in the `sqlite` project, a fresh PostgreSQL database in the
 * `postgres` one): round trips, the history trimmed and ordered, idempotent acknowledgements, the notifiers'
 * compare-and-set from two stores on one place, long texts cut, data kept across a reopen, a newer schema refused,
 * and a PostgreSQL URL's password never in an error.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type AgentStore, type AgentStoreLocation, cutText, openAgentStore, TEXT_LIMIT } from "../../src/agent/store.js";
import type { AgentEvent, HistoryEntry, StackStatus } from "../../src/model/agent.js";
import { freshDatabase, TEST_STORE } from "../helpers/server.js";

const dir = mkdtempSync(join(tmpdir(), "edgeplan-agent-store-"));
const opened: AgentStore[] = [];
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

let files = 0;
/** A new place for a store on the project's engine: a SQLite file of its own, or a fresh database. */
async function newPlace(): Promise<AgentStoreLocation> {
  return TEST_STORE === "postgres" ? { database: await freshDatabase() } : { data: join(dir, `agent-${++files}.db`) };
}

async function open(where: AgentStoreLocation): Promise<AgentStore> {
  const store = await openAgentStore(where);
  opened.push(store);
  return store;
}

function status(name: string, over: Partial<StackStatus> = {}): StackStatus {
  return {
    name,
    source: "routing",
    mode: "correct",
    suspended: false,
    conditions: [{ type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: "applied abc1234", since: "2026-11-28T10:00:00Z" }],
    last_applied_revision: { sha: "abc1234", author: "Ada", subject: "Route /api", at: "2026-11-28T09:59:00Z" },
    last_attempted_revision: null,
    drift: [],
    drift_since: null,
    waiting: [],
    rollouts: [],
    last_reconciled_at: "2026-11-28T10:00:00Z",
    failures: 0,
    ...over,
  };
}

function entry(stack: string, n: number, over: Partial<HistoryEntry> = {}): Omit<HistoryEntry, "seq"> {
  return {
    stack,
    started_at: `2026-11-28T10:00:${String(n).padStart(2, "0")}Z`,
    finished_at: `2026-11-28T10:00:${String(n).padStart(2, "0")}Z`,
    trigger: "interval",
    revision: null,
    result: "in_sync",
    message: `reconciliation ${n}`,
    digest: null,
    plan_text: null,
    report: null,
    ...over,
  };
}

describe(`the agent's store (${TEST_STORE})`, () => {
  it("keeps statuses whole, lists them by name, and answers null for an unknown stack", async () => {
    const store = await open(await newPlace());
    await store.putStatus(status("staging"));
    await store.putStatus(status("production", { failures: 2 }));
    await store.putStatus(status("staging", { mode: "warn", drift: [{ address: "edge.main", action: "update", detail: "hostports differ" }] }));
    expect((await store.listStatus()).map((s) => s.name)).toEqual(["production", "staging"]);
    expect(await store.getStatus("staging")).toEqual(status("staging", { mode: "warn", drift: [{ address: "edge.main", action: "update", detail: "hostports differ" }] }));
    expect(await store.getStatus("production")).toEqual(status("production", { failures: 2 }));
    expect(await store.getStatus("nowhere")).toBeNull();
  });

  it("numbers history entries in increasing order, answers newest first, and keeps only the newest `keep` of a stack", async () => {
    const store = await open(await newPlace());
    const added: HistoryEntry[] = [];
    for (let n = 1; n <= 5; n++) added.push(await store.addHistory(entry("production", n), 3));
    await store.addHistory(entry("staging", 1), 3);
    const seqs = added.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(5);
    expect(added[4]).toEqual({ seq: seqs[4], ...entry("production", 5) });
    const kept = await store.history("production", 10);
    expect(kept.map((e) => e.message)).toEqual(["reconciliation 5", "reconciliation 4", "reconciliation 3"]);
    expect(kept).toEqual([added[4], added[3], added[2]]);
    expect((await store.history("production", 1)).map((e) => e.seq)).toEqual([seqs[4]]);
    expect((await store.history("staging", 10)).map((e) => e.message)).toEqual(["reconciliation 1"]);
    await expect(store.addHistory(entry("production", 6), 0)).rejects.toThrow("the agent's store was asked for keep 0; it must be an integer of at least 1");
  });

  it("cuts a 1 MiB plan at a line, says so on a last line, and keeps it within 256 KiB", async () => {
    const store = await open(await newPlace());
    const line = `${"+ route /api -> bkdwd_checkout weight 100".padEnd(63, ".")}\n`; // 64 bytes
    const plan = line.repeat(16384); // 1 MiB
    const added = await store.addHistory(entry("production", 1, { plan_text: plan, report: "applied 1 change" }), 5);
    const kept = line.repeat(4092); // the whole lines that fit in 256 KiB less the room of the note
    const note = `[cut: ${1048576 - kept.length} of 1048576 bytes not kept; the history keeps 262144 bytes of a plan or report]\n`;
    expect(added.plan_text).toBe(kept + note);
    expect(Buffer.byteLength(added.plan_text ?? "")).toBeLessThanOrEqual(TEXT_LIMIT);
    expect(added.report).toBe("applied 1 change");
    expect((await store.history("production", 1))[0]?.plan_text).toBe(kept + note);
  });

  it("cuts a long text without lines between two characters, never inside one", () => {
    const cut = cutText("é".repeat(200_000)); // 400 000 bytes, 2 a character
    expect(cut).toBe(`${"é".repeat(130_972)}\n[cut: 138055 of 400000 bytes not kept; the history keeps 262144 bytes of a plan or report]\n`);
    expect(cutText("short\n")).toBe("short\n");
  });

  it("records an acknowledgement once for a stack, rule and digest", async () => {
    const store = await open(await newPlace());
    const ack = { stack: "production", rule: "prune-routes", digest: "sha256:aa", by: "ada", at: "2026-11-28T10:00:00Z" };
    await store.addAck(ack);
    await store.addAck({ ...ack, by: "bob", at: "2026-11-28T10:05:00Z" });
    await store.addAck({ ...ack, rule: "large-change" });
    await store.addAck({ ...ack, digest: "sha256:bb" });
    expect(await store.acks("production", "sha256:aa")).toEqual([{ ...ack, rule: "large-change" }, ack]);
    expect(await store.acks("staging", "sha256:aa")).toEqual([]);
  });

  it("sets a notifier's last event only when it is still the one expected, and keeps suspend overrides", async () => {
    const store = await open(await newPlace());
    expect(await store.lastEvent("production", "slack")).toBeNull();
    expect(await store.swapEvent("production", "slack", null, "applied")).toBe(true);
    expect(await store.swapEvent("production", "slack", null, "failed")).toBe(false);
    expect(await store.swapEvent("production", "slack", "failed", "recovered")).toBe(false);
    expect(await store.swapEvent("production", "slack", "applied", "failed")).toBe(true);
    expect(await store.lastEvent("production", "slack")).toBe("failed");
    // An event not delivered is given back: to the one before, or to none.
    expect(await store.swapEvent("production", "slack", "applied", null)).toBe(false);
    expect(await store.swapEvent("production", "slack", "failed", null)).toBe(true);
    expect(await store.lastEvent("production", "slack")).toBeNull();
    expect(await store.swapEvent("production", "slack", null, "failed")).toBe(true);
    expect(await store.lastEvent("production", "webhook")).toBeNull();
    expect(await store.suspended("production")).toBeNull();
    await store.setSuspended("production", true);
    expect(await store.suspended("production")).toBe(true);
    await store.setSuspended("production", false);
    expect(await store.suspended("production")).toBe(false);
  });

  it("lets exactly one of two stores on one place win each swap of the same event", async () => {
    const where = await newPlace();
    const [a, b] = [await open(where), await open(where)] as [AgentStore, AgentStore];
    const events: AgentEvent[] = ["failed", "recovered", "drift_detected", "drift_corrected", "waiting", "applied"];
    let expected: AgentEvent | null = null;
    for (let round = 0; round < 12; round++) {
      const next = events[round % events.length] as AgentEvent;
      const won = await Promise.all([a.swapEvent("production", "webhook", expected, next), b.swapEvent("production", "webhook", expected, next)]);
      expect(won.filter(Boolean)).toHaveLength(1);
      expected = next;
    }
    expect(await b.lastEvent("production", "webhook")).toBe("applied");
  });

  it("finds its data again after a reopen, and refuses a store written by a newer edgeplan", async () => {
    const where = await newPlace();
    const first = await openAgentStore(where);
    await first.putStatus(status("production"));
    const added = await first.addHistory(entry("production", 1), 5);
    await first.swapEvent("production", "slack", null, "waiting");
    await first.close();
    await first.close();
    const again = await open(where);
    expect(await again.getStatus("production")).toEqual(status("production"));
    expect(await again.history("production", 5)).toEqual([added]);
    expect((await again.addHistory(entry("production", 2), 5)).seq).toBeGreaterThan(added.seq);
    expect(await again.lastEvent("production", "slack")).toBe("waiting");
    await again.close();
    if (where.database) {
      const client = new pg.Client({ connectionString: where.database });
      await client.connect();
      await client.query("UPDATE edgeplan_agent_schema SET version = 99");
      await client.end();
      await expect(openAgentStore(where)).rejects.toThrow(
        "the database has edgeplan agent schema 99, newer than this edgeplan knows (1); upgrade edgeplan, or point --database at another database",
      );
    } else {
      expect(statSync(where.data as string).mode & 0o777).toBe(0o600);
      const db = new Database(where.data);
      db.exec("PRAGMA user_version = 99");
      db.close();
      await expect(openAgentStore(where)).rejects.toThrow(
        `the data file ${where.data} was written by a newer edgeplan (schema 99, this one knows 1); upgrade edgeplan or use another --data file`,
      );
    }
  });

  it("names the store and what it could not do when its engine fails after the open", async () => {
    const where = await newPlace();
    const store = await openAgentStore(where);
    await store.close();
    const failed = await store.getStatus("production").then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failed?.name).toBe("EdgeplanError");
    expect(failed?.message).toMatch(/^the agent's store \((.+)\) could not read the status of production: ./);
    expect(failed?.message).toContain(`(${where.database ?? where.data})`);
  });

  it("names the store and hides the password of a PostgreSQL URL it cannot reach", async () => {
    const url = "postgres://agent:canary-s3cret%21@127.0.0.1:1/agent";
    const failed = await openAgentStore({ database: url }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failed?.name).toBe("EdgeplanError");
    expect(failed?.message).toBe(
      "cannot open the agent's store on the database postgres://agent:***@127.0.0.1:1/agent: connect ECONNREFUSED 127.0.0.1:1; check the URL, and that PostgreSQL runs and lets this user in",
    );
    expect(failed?.message).not.toContain("canary");
  });
});
