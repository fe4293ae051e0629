/**
 * Crashes. (1) `edgeplan apply` killed with SIGKILL at random points of its run, 20 times (two sequences of 10 on
 * their own stacks, cycling through creates, updates and prunes of the fault world): the next apply converges, and
 * no owner marker is ever carried by two objects. (2) `edgeplan serve --data FILE` killed with SIGKILL under a load
 * of creates, updates and deletes: after a restart on the same file, every write that was answered 2xx is there.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, randomKey, spawnServer, type HttpResponse, type SpawnedServer } from "../helpers/server.js";
import { runEdgeplan, startCli, tempDir } from "./cli.js";
import { CHILDREN, FIXTURES_YAML, markersInStore, ROUTES, VARIANT_NAMES, writeWorld } from "./world.js";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (at most `limitMs`) until `check` is true; polls every 5 ms. */
async function waitFor(check: () => boolean, limitMs: number): Promise<boolean> {
  for (let waited = 0; waited < limitMs; waited += 5) {
    if (check()) return true;
    await sleep(5);
  }
  return check();
}

describe("apply killed with SIGKILL at random points", () => {
  let server: SpawnedServer;
  const apiKey = randomKey();
  const dir = tempDir("crash-apply");
  const data = join(dir.path, "data.db");

  beforeAll(async () => {
    writeFileSync(join(dir.path, "fixtures.yaml"), FIXTURES_YAML);
    // Latency spreads the run's requests out, so that a kill lands among them rather than before or after.
    server = await spawnServer(["--fixtures", join(dir.path, "fixtures.yaml"), "--data", data, "--latency", "10-40", "--quiet"], {}, { apiKey });
  });
  afterAll(async () => {
    await server?.stop();
    dir.remove();
  });

  describe.concurrent("two sequences of 10 kills, each on its own stack", () => {
    for (const sequence of [0, 1]) {
      it(`sequence ${sequence}`, async () => {
        const stack = `crash-${sequence}`;
        const cwd = join(dir.path, stack);
        const env = { EDGEPLAN_API_URL: server.url, EDGEPLAN_API_KEY: apiKey };
        // A killed apply leaves its lease behind: with a TTL of 1 s, the next apply waits about that long, then goes on.
        const args = (cmd: string): string[] => [
          cmd,
          "manifests",
          "--stack",
          stack,
          "--prune",
          ...(cmd === "apply" ? ["--auto-approve", "--force", "--lock-ttl", "1s"] : []),
        ];
        let midRun = 0;
        for (let trial = 0; trial < 10; trial++) {
          const variant = trial % 3;
          // Each sequence manages its own route: two stacks applying different modules to one route would race.
          writeWorld(cwd, variant, ROUTES[sequence]);
          const run = startCli(args("apply"), { cwd, env, timeoutMs: 60_000 });
          // Kill once the changes have started running, after a random share of the run.
          const started = await waitFor(() => /^Applying \d+ changes?/m.test(run.stderr()) || run.proc.exitCode !== null, 30_000);
          expect(started).toBe(true);
          await sleep(Math.floor(Math.random() * 150));
          run.proc.kill("SIGKILL");
          const killed = await run.done;
          if (killed.signal === "SIGKILL" && !/^(Apply complete|Apply finished)/m.test(killed.stdout)) midRun++;

          const byMarker = markersInStore(data, apiKey).byMarker;
          const twice = [...byMarker].filter(([marker, ids]) => marker.startsWith(`${stack}/`) && ids.length !== 1);
          expect(twice, `after kill ${trial}: markers carried by more than one object`).toEqual([]);

          const finish = await runEdgeplan(args("apply"), { cwd, env, timeoutMs: 60_000 });
          expect(finish.code, `trial ${trial}, variant ${variant}:\n${finish.stdout}\n${finish.stderr}`).toBe(0);
          expect(finish.stderr.split("\n").filter((l) => l.startsWith("warning: --lock-ttl 1s: renewing the lease every 333ms takes 180 of the 120"))).toHaveLength(1);
          expect(finish.stdout).toMatch(/^(Converged: the live state matches the manifests|No changes\. Live state matches the manifests)\.$/m);
          const after = markersInStore(data, apiKey).byMarker;
          const ours = [...after.entries()].filter(([m]) => m.startsWith(`${stack}/`));
          expect(ours.map(([m]) => m).sort(), `trial ${trial}`).toEqual((VARIANT_NAMES[variant] as readonly string[]).map((n) => `${stack}/${n}`).sort());
          for (const [marker, ids] of ours) expect(ids, `trial ${trial}: ${marker}`).toHaveLength(1);
        }
        const plan = await runEdgeplan(["plan", "manifests", "--stack", stack, "--prune", "--detailed-exitcode"], { cwd, env });
        expect(plan.code, plan.stdout).toBe(0);
        // Most kills must have landed inside a run, or this says little about crashes.
        expect(midRun).toBeGreaterThanOrEqual(5);
      }, 180_000);
    }
  });
  it("Ctrl-C (SIGINT) mid-run: the requests in flight finish, nothing new starts, the summary says so, and the next apply finishes the job", async () => {
    const stack = "crash-sigint";
    const cwd = join(dir.path, stack);
    const env = { EDGEPLAN_API_URL: server.url, EDGEPLAN_API_KEY: apiKey };
    const args = ["apply", "manifests", "--stack", stack, "--prune", "--auto-approve", "--force", "--concurrency", "1"];
    let interrupted = 0;
    for (let trial = 0; trial < 3; trial++) {
      writeWorld(cwd, trial, ROUTES[2]);
      const run = startCli(args, { cwd, env, timeoutMs: 60_000 });
      expect(await waitFor(() => /^Applying \d+ changes?/m.test(run.stderr()) || run.proc.exitCode !== null, 30_000)).toBe(true);
      await sleep(20 + Math.floor(Math.random() * 40));
      run.proc.kill("SIGINT");
      const r = await run.done;
      // The signal landed mid-run (130, the summary says so) or after the last change (0, converged).
      expect([0, 130], r.stdout + r.stderr).toContain(r.code);
      for (const line of r.code === 130 ? INTERRUPTED_LINES : CONVERGED_LINES) expect(r.stdout, `exit ${r.code}`).toMatch(line);
      if (r.code === 130) interrupted++;
      const finish = await runEdgeplan(args, { cwd, env, timeoutMs: 60_000 });
      expect(finish.code, finish.stdout + finish.stderr).toBe(0);
      const ours = [...markersInStore(data, apiKey).byMarker.entries()].filter(([m]) => m.startsWith(`${stack}/`));
      expect(ours.map(([m]) => m).sort()).toEqual((VARIANT_NAMES[trial] as readonly string[]).map((n) => `${stack}/${n}`).sort());
      for (const [marker, ids] of ours) expect(ids, marker).toHaveLength(1);
    }
    expect(interrupted).toBeGreaterThanOrEqual(1);
  }, 90_000);
});

/** What stdout says after an apply interrupted by SIGINT (exit 130). */
const INTERRUPTED_LINES = [
  /^Apply interrupted \(SIGINT\): \d+ done(, \d+ failed)?(, \d+ skipped)?, \d+ not started\.$/m,
  /^Not checked for convergence: the run was interrupted\. Run apply again to finish it/m,
];
/** What stdout says after an apply that finished before the signal (exit 0). */
const CONVERGED_LINES = [/^(Converged: the live state matches the manifests\.|Not checked for convergence: .+)$/m];

describe("serve killed with SIGKILL under load", () => {
  it("keeps every write it answered 2xx after a restart on the same data file", async () => {
    const dir = tempDir("crash-serve");
    const data = join(dir.path, "data.db");
    const fixtures = join(dir.path, "fixtures.yaml");
    writeFileSync(fixtures, FIXTURES_YAML);
    const apiKey = randomKey();
    const first = await spawnServer(["--fixtures", fixtures, "--data", data, "--quiet"], {}, { apiKey });
    const api = apiClient(first.url, apiKey);

    // Per object: the descriptions written in order, how many of them were answered 2xx, and a delete's fate.
    interface Tracked {
      id: string;
      writes: string[];
      acked: number;
      deleteSent: boolean;
      deleteAcked: boolean;
    }
    const tracked: Tracked[] = [];
    let stop = false;
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; i < 10_000 && !stop; i++) {
        let created: HttpResponse;
        try {
          created = await api.post("/backends/weighted", { description: `w${w}-${i}-v0`, backends: { [CHILDREN[0] as string]: 1 } });
        } catch {
          return; // the server is gone: this create's fate is unknown, and it is not tracked
        }
        if (created.status !== 201) return;
        const t: Tracked = { id: created.json.id as string, writes: [`w${w}-${i}-v0`], acked: 1, deleteSent: false, deleteAcked: false };
        tracked.push(t);
        for (let v = 1; v <= 2 && !stop; v++) {
          const description = `w${w}-${i}-v${v}`;
          t.writes.push(description);
          try {
            const r = await api.patch(`/backends/weighted/${t.id}`, { description, backends: { [CHILDREN[v] as string]: v } });
            if (r.status !== 200) return;
            t.acked = t.writes.length;
          } catch {
            return;
          }
        }
        if (i % 3 === 0 && !stop) {
          t.deleteSent = true;
          try {
            t.deleteAcked = (await api.del(`/backends/weighted/${t.id}`)).status === 204;
          } catch {
            return;
          }
        }
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) => worker(w));
    await waitFor(() => tracked.length >= 60, 20_000);
    await first.kill9();
    stop = true;
    await Promise.all(workers);
    expect(tracked.length).toBeGreaterThanOrEqual(60);

    const second = await spawnServer(["--fixtures", fixtures, "--data", data, "--quiet"], {}, { apiKey });
    try {
      const again = apiClient(second.url, apiKey);
      let checked = 0;
      let deleted = 0;
      for (const t of tracked) {
        const r = await again.get(`/backends/weighted/${t.id}`);
        if (t.deleteAcked) {
          expect(r.status, `${t.id} was deleted (answered 204)`).toBe(404);
          deleted++;
          continue;
        }
        if (t.deleteSent && r.status === 404) continue; // the delete's answer was lost: gone is one of its outcomes
        expect(r.status, `${t.id} was created (answered 201)`).toBe(200);
        // The last acknowledged write, or a later one whose answer the kill cut off.
        const allowed = t.writes.slice(t.acked - 1);
        expect(allowed, `${t.id}: ${r.json.description}`).toContain(r.json.description);
        const v = t.writes.indexOf(r.json.description as string);
        expect(r.json.backends).toEqual(v === 0 ? { [CHILDREN[0] as string]: 1 } : { [CHILDREN[v] as string]: v });
        checked++;
      }
      // Both kinds of object were met: kept ones read back, acknowledged deletes stay gone.
      expect(checked).toBeGreaterThan(0);
      expect(deleted).toBeGreaterThan(0);
      // The store is whole: every object it holds reads back, and nothing is there that no client sent.
      const { total } = markersInStore(data, apiKey);
      const sent = new Set(tracked.map((t) => t.id));
      const listed = (await again.get("/backends/weighted?limit=100")).json.backends as Array<{ id: string; description: string }>;
      expect(total).toBeLessThanOrEqual(tracked.length + 8);
      // An object no client tracked is a create whose answer the kill cut off: it holds its first description.
      const untracked = listed.filter((b) => !sent.has(b.id));
      expect(
        untracked.filter((b) => !/^w\d+-\d+-v0$/.test(b.description)),
        "untracked objects with a later description",
      ).toEqual([]);
    } finally {
      await second.stop();
      dir.remove();
    }
  }, 60_000);
});
