/**
 * One apply at a time (docs/reliability.md, "One apply at a time"): the built CLI against the real server. Five
 * applies of one stack started together converge on one object per manifest; a killed holder's lease expires and
 * the next apply goes on; `--lock-timeout 0` fails at once naming the holder; `edgeplan unlock` removes a lease.
 */
import { readdirSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildLeaseBody } from "../../src/apply/lease-record.js";
import { parseLease } from "../../src/model/lease.js";
import type { WeightedBackend } from "../../src/model/wire.js";
import { closeWorlds, HR1, startWorld, wbYaml, type RunningCli, type World } from "./e2e.js";

afterAll(closeWorlds);

const NAMES = Array.from({ length: 20 }, (_, i) => `svc-${String(i + 1).padStart(2, "0")}`);

/** 20 new weighted backends. */
function twentyManifests(w: World): void {
  w.manifests(Object.fromEntries(NAMES.map((n) => [`${n}.yaml`, wbYaml(n, { [HR1]: 100 })])));
}

/** Every weighted backend (20 manifests and a few leases fit one page). */
async function everything(w: World): Promise<WeightedBackend[]> {
  const all = await w.list();
  expect(all.length).toBeLessThan(100);
  return all;
}

/** Checks that the account holds exactly one object per manifest and nothing else (no lease left behind). */
async function expectOnePerManifest(w: World): Promise<void> {
  const all = await everything(w);
  expect(all.filter((wb) => parseLease(wb) !== null)).toEqual([]);
  const owned = await w.owned();
  expect([...owned.keys()].sort()).toEqual(NAMES);
  expect(all).toHaveLength(NAMES.length);
}

/** Waits (at most 20 s, polling every 50 ms) until `cli` has written `text` on stderr. */
async function waitForStderr(cli: RunningCli, text: string): Promise<void> {
  for (let i = 0; i < 400 && !cli.stderr().includes(text); i++) await new Promise((r) => setTimeout(r, 50));
  expect(cli.stderr(), `stderr never said "${text}"`).toContain(text);
}

/** A world whose apply of the 20 manifests, with this lease TTL, was killed with SIGKILL after its first create. */
async function killedHolder(ttl: string): Promise<{ w: World; holder: RunningCli }> {
  // 20 creates one at a time, 100 ms each: the kill lands well inside the run.
  const w = await startWorld({ latency: [100, 100] });
  twentyManifests(w);
  const holder = w.spawnCli(["apply", "m", "--auto-approve", "--lock-ttl", ttl, "--concurrency", "1"]);
  await waitForStderr(holder, "created");
  holder.proc.kill("SIGKILL");
  await holder.done;
  return { w, holder };
}

describe("stack lease", () => {
  it("five applies of one stack started together all exit 0 and leave exactly one object per manifest", async () => {
    const w = await startWorld({ latency: [5, 15] });
    twentyManifests(w);
    const runs = Array.from({ length: 5 }, () => w.spawnCli(["apply", "m", "--auto-approve", "--lock-ttl", "3s"]));
    const results = await Promise.all(runs.map((r) => r.done));
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0, 0]);
    // One of them created the 20 objects; the others waited, then found nothing to do.
    const creators = results.filter((r) => r.stderr.includes("Applying 20 changes"));
    expect(creators).toHaveLength(1);
    expect(results.filter((r) => r.stderr.includes("Nothing to apply: no change was sent."))).toHaveLength(4);
    expect(results.filter((r) => /stack "default" is locked by host .*; waiting for it \(--lock-timeout 5m\)/.test(r.stderr)).length).toBeGreaterThanOrEqual(1);
    await expectOnePerManifest(w);
    // 20 creates, and for each apply its lease: one create and one delete (no other write).
    const posts = w.writes().filter((l) => l.method === "POST" && l.status === 201);
    expect(posts.length).toBeGreaterThanOrEqual(20 + 5);
    expect(w.writes().filter((l) => l.method === "PUT")).toEqual([]);
  });

  it("a killed holder's lease expires after its TTL and the next apply goes on", async () => {
    const { w, holder } = await killedHolder("2s");
    const left = (await everything(w)).map((wb) => parseLease(wb)).filter((l) => l !== null);
    expect(left).toHaveLength(1);
    expect(left[0]?.holder.pid).toBe(holder.proc.pid);

    const next = await w.cli(["apply", "m", "--auto-approve"]);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toContain(`stack "default" is locked by host ${hostname()}, process ${holder.proc.pid}`);
    // The lease's id once, in the holder's description, not twice.
    expect(next.stderr).toMatch(
      new RegExp(`^the lease of host ${hostname()}, process ${holder.proc.pid}, started \\S+ \\(lease ${left[0]?.id}\\) expired \\(no renewal for 2s\\); removed it$`, "m"),
    );
    expect(next.stdout).toContain("Converged: the live state matches the manifests.");
    await expectOnePerManifest(w);
  });

  it("--lock-timeout 0 fails at once naming the holder: host, process and CI run URL", async () => {
    // Slow answers keep the holder busy (20 creates one at a time: over 5 s) while the second apply starts.
    const w = await startWorld({ latency: [250, 250] });
    twentyManifests(w);
    const ci = { GITHUB_SERVER_URL: "https://github.example", GITHUB_REPOSITORY: "acme/routes", GITHUB_RUN_ID: "4242" };
    const holder = w.spawnCli(["apply", "m", "--auto-approve", "--concurrency", "1"], ci);
    await waitForStderr(holder, "created");
    const mark = w.log().length;
    const second = await w.cli(["apply", "m", "--auto-approve", "--lock-timeout", "0"]);
    expect(second.code, second.stderr).toBe(1);
    const lease = (await everything(w)).map((wb) => parseLease(wb)).find((l) => l !== null);
    expect(lease?.holder.pid).toBe(holder.proc.pid);
    expect(second.stderr).toContain(
      `edgeplan: stack "default" is locked by another apply: host ${hostname()}, process ${holder.proc.pid}, run https://github.example/acme/routes/actions/runs/4242, started ${lease?.holder.started_at} (lease ${lease?.id}); --lock-timeout 0: not waiting. `,
    );
    expect(second.stderr).toContain(`or remove it now with: edgeplan unlock default --lease-id ${lease?.id}\n`);
    expect(second.stdout).toBe("");
    // At once: its own candidate, one listing, and the candidate deleted; no wait, no read of the holder.
    // (The holder only creates; a waiter would read the holder's lease by id.)
    expect(w.log(mark).filter((l) => l.method === "GET" && l.path.startsWith("/backends/weighted/"))).toEqual([]);
    expect(w.log(mark).filter((l) => l.method === "DELETE")).toHaveLength(1);
    expect((await holder.done).code).toBe(0);
    await expectOnePerManifest(w);
  });

  it("edgeplan unlock STACK shows the holder; without a terminal it needs --lease-id (a wrong one removes nothing) or --force", async () => {
    const { w, holder } = await killedHolder("10m");
    const lease = (await everything(w)).map((wb) => parseLease(wb)).find((l) => l !== null);
    const holderText = `host ${hostname()}, process ${holder.proc.pid}, started ${lease?.holder.started_at} (lease ${lease?.id})`;
    const shown = `stack "default" is locked by ${holderText}\n`;

    const bare = await w.cli(["unlock", "default"]);
    expect(bare.code).toBe(1);
    expect(bare.stdout).toBe("");
    expect(bare.stderr).toBe(
      `${shown}edgeplan: no terminal to ask on, so nothing removed: pass --lease-id ${lease?.id} to remove the lease shown above ` +
        `(an apply that still holds it stops before its next write), or --force to remove every lease of stack "default"\n`,
    );
    const wrong = await w.cli(["unlock", "default", "--lease-id", "bkdwd_000000000000000000000000000"]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(
      `${shown}edgeplan: --lease-id bkdwd_000000000000000000000000000: stack "default" has no such lease (its lease: ${lease?.id}); nothing removed\n`,
    );
    expect((await everything(w)).filter((wb) => parseLease(wb) !== null).map((wb) => wb.id)).toEqual([lease?.id]);

    const unlock = await w.cli(["unlock", "default", "--lease-id", lease?.id as string]);
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stderr).toBe("");
    expect(unlock.stdout).toBe(`removed the lease of stack "default" held by ${holderText}\n`);
    expect((await everything(w)).filter((wb) => parseLease(wb) !== null)).toEqual([]);
    expect((await w.cli(["unlock", "default"])).stdout).toBe('stack "default" is not locked: nothing removed\n');
    const next = await w.cli(["apply", "m", "--auto-approve", "--lock-timeout", "0"]);
    expect(next.code, next.stderr).toBe(0);
    await expectOnePerManifest(w);
  });

  it("edgeplan unlock --force removes every lease of the stack", async () => {
    const { w } = await killedHolder("10m");
    const unlock = await w.cli(["unlock", "default", "--force"]);
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stdout).toMatch(/^removed the lease of stack "default" held by .* \(lease bkdwd_\w{27}\)\n$/);
    expect(unlock.stderr).toBe("");
    expect((await everything(w)).filter((wb) => parseLease(wb) !== null)).toEqual([]);
  });

  it("unlock of a running apply: it stops before its next write, exit 1, naming what removed its lease and what it did not start", async () => {
    // 60 creates, 4 at once, 250 ms each: about 4 s of writes; its lease is confirmed at least every second (TTL 3 s).
    const w = await startWorld({ latency: [250, 250] });
    const names = Array.from({ length: 60 }, (_, i) => `run-${String(i).padStart(2, "0")}`);
    w.manifests(Object.fromEntries(names.map((n) => [`${n}.yaml`, wbYaml(n, { [HR1]: 100 })])));
    const running = w.spawnCli(["apply", "m", "--auto-approve", "--lock-ttl", "3s"]);
    await waitForStderr(running, "created");
    const lease = (await everything(w)).map((wb) => parseLease(wb)).find((l) => l !== null);
    const unlock = await w.cli(["unlock", "default", "--lease-id", lease?.id as string]);
    expect(unlock.code, unlock.stderr).toBe(0);
    const removedAt = (await w.owned()).size;
    const result = await running.done;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(
      `edgeplan: the lease of stack "default" (lease ${lease?.id}) was removed (by edgeplan unlock, or by another apply that found it expired) while this apply held it: ` +
        "no new change starts; the requests in flight finish\n",
    );
    const held = await w.owned();
    const notStarted = [...result.stdout.matchAll(/^ {2}not started +weighted_backend\.(run-\d\d): /gm)].map((m) => m[1]);
    // A change done is listed once, by its progress line on stderr; the report lists what was not done.
    const done = [...result.stderr.matchAll(/^weighted_backend\.(run-\d\d): created /gm)].map((m) => m[1]);
    expect(done.length + notStarted.length).toBe(60);
    expect(notStarted.length).toBeGreaterThan(0);
    expect(result.stderr).toMatch(
      new RegExp(
        `^edgeplan: stopped before the next write: ${done.length} done, 0 failed, 0 skipped, ${notStarted.length} not started, of 60 changes \\(not started: weighted_backend\\.run-\\d\\d.*\\); run apply again once the stack is free$`,
        "m",
      ),
    );
    // What the server holds is what was done; after the removal at most the writes in flight and those started
    // within one confirmation interval (1 s: 4 at once, 250 ms each) went out.
    expect([...held.keys()].sort()).toEqual([...done].sort());
    expect(held.size - removedAt).toBeLessThanOrEqual(4 * 6);
    const removal = w.log().findIndex((l) => l.method === "DELETE" && l.path === `/backends/weighted/${lease?.id}`);
    const after = w.writes(removal + 1).filter((l) => l.method === "POST");
    console.log(`creates answered after the lease's removal: ${after.length}`);
    // Besides them, at most the renewal of the removed lease, refused.
    for (const l of w.writes(removal + 1).filter((x) => x.method !== "POST")) expect(`${l.method} ${l.path} ${l.status}`).toBe(`PATCH /backends/weighted/${lease?.id} 404`);
    expect(after.length).toBeLessThanOrEqual(4 * 6);
    // It gave back no lease, since it held none: the stack is free.
    expect((await everything(w)).filter((wb) => parseLease(wb) !== null)).toEqual([]);
  });

  it("a lease taken by another apply while the run holds it: the run names the new holder and stops, exit 1", async () => {
    const w = await startWorld({ latency: [250, 250] });
    const names = Array.from({ length: 60 }, (_, i) => `take-${String(i).padStart(2, "0")}`);
    w.manifests(Object.fromEntries(names.map((n) => [`${n}.yaml`, wbYaml(n, { [HR1]: 100 })])));
    const running = w.spawnCli(["apply", "m", "--auto-approve", "--lock-ttl", "3s"]);
    await waitForStderr(running, "created");
    const lease = (await everything(w)).map((wb) => parseLease(wb)).find((l) => l !== null);
    // What another apply does when it finds a lease expired: delete it, then create its own.
    expect((await w.raw.del(`/backends/weighted/${lease?.id}`)).status).toBe(204);
    const other = { host: "ci-runner-9", pid: 777, started_at: "2026-01-02T03:04:05Z", token: "other" };
    const taken = await w.raw.post("/backends/weighted", buildLeaseBody("default", other, 60_000, 0));
    expect(taken.status).toBe(201);
    const result = await running.done;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(
      `edgeplan: the lease of stack "default" (lease ${lease?.id}) was taken by host ci-runner-9, process 777, started 2026-01-02T03:04:05Z ` +
        `(lease ${(taken.json as { id: string }).id}) while this apply held it: no new change starts; the requests in flight finish\n`,
    );
    expect(result.stderr).toMatch(/^edgeplan: stopped before the next write: \d+ done, 0 failed, 0 skipped, \d+ not started, of 60 changes/m);
    // The other apply's lease is not touched.
    expect((await everything(w)).map((wb) => parseLease(wb)?.holder.token).filter((t) => t !== undefined)).toEqual(["other"]);
  });

  it("plan and export never show a lease object", async () => {
    const { w } = await killedHolder("10m");
    w.manifests({ "one.yaml": wbYaml(NAMES[0] as string, { [HR1]: 100 }) });
    const lease = (await everything(w)).map((wb) => parseLease(wb)).find((l) => l !== null);
    expect(lease).toBeDefined();
    const plan = await w.cli(["plan", "m", "--prune", "--format", "json"]);
    expect(plan.code, plan.stderr).toBe(0);
    const json = JSON.parse(plan.stdout) as { changes: Array<{ id: string | null }>; orphans: Array<{ id: string }> };
    expect(JSON.stringify(json)).not.toContain(lease?.id);
    const exported = await w.cli(["export", "--out", "exported"]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout + exported.stderr).not.toContain(lease?.id);
    const files = readdirSync(join(w.dir, "exported"), { recursive: true, encoding: "utf8" });
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      if (f.endsWith(".yaml")) expect(readFileSync(join(w.dir, "exported", f), "utf8")).not.toContain("lease");
    }
  });
});
