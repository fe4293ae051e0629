/**
 * The ring race: K weighted backends with no children, then K PATCHes sent at once where PATCH i makes object i
 * reference object i+1 (mod K). Whatever the interleaving, K-1 of them may succeed and the one that would close the
 * ring must be refused as a cycle (400 ERR_NGROK_6524); the graph read back through the API must hold no cycle.
 */
import { expect } from "vitest";
import type { ApiClient, HttpResponse } from "./server.js";

/** What the rounds saw: one entry per failed expectation, so that a run reports every bad round at once. */
export interface RingRaceReport {
  /** `round R (K objects): a -> b -> a` for each round whose graph, read back, held a cycle. */
  cycles: string[];
  /** `round R: PATCH <id> answered 500 ERR_NGROK_500` for each answer of 500 or more. */
  serverErrors: string[];
  /** Rounds whose answers were not K-1 times 200 and once 400 ERR_NGROK_6524, with what they were. */
  otherAnswers: string[];
}

const POOL = 8;

/** A cycle among the objects' children, as `a -> b -> a`, or undefined. */
export function findCycle(children: Map<string, string[]>): string | undefined {
  const state = new Map<string, "open" | "done">();
  const visit = (node: string, path: string[]): string | undefined => {
    if (state.get(node) === "open") return [...path.slice(path.indexOf(node)), node].join(" -> ");
    if (state.get(node) === "done") return undefined;
    state.set(node, "open");
    for (const next of children.get(node) ?? []) {
      const found = visit(next, [...path, node]);
      if (found) return found;
    }
    state.set(node, "done");
    return undefined;
  };
  for (const node of children.keys()) {
    const found = visit(node, []);
    if (found) return found;
  }
  return undefined;
}

async function readGraph(clients: ApiClient[], ids: string[]): Promise<Map<string, string[]>> {
  const read = await Promise.all(ids.map((id, i) => (clients[i % clients.length] as ApiClient).get(`/backends/weighted/${id}`)));
  return new Map(
    read.map((r, i) => {
      expect(r.status, r.text).toBe(200);
      return [ids[i] as string, Object.keys(r.json.backends as Record<string, number>)];
    }),
  );
}

function describeAnswers(answers: HttpResponse[]): string {
  return answers.map((r) => `${r.status}${r.json?.error_code ? ` ${r.json.error_code}` : ""}`).join(", ");
}

/**
 * Runs `rounds` ring races over a pool of 8 objects, spreading the requests over `clients` (one per replica), with
 * rings of 2 to 8 objects in turn, each ring over the pool in another order. Each round ends with the graph read back
 * and every object's children emptied again.
 */
export async function ringRace(clients: ApiClient[], rounds: number): Promise<RingRaceReport> {
  const client = (i: number): ApiClient => clients[i % clients.length] as ApiClient;
  const pool: string[] = [];
  for (let i = 0; i < POOL; i++) {
    const r = await client(i).post("/backends/weighted", { backends: {} });
    expect(r.status, r.text).toBe(201);
    pool.push(r.json.id as string);
  }
  const report: RingRaceReport = { cycles: [], serverErrors: [], otherAnswers: [] };
  for (let round = 0; round < rounds; round++) {
    const k = 2 + (round % (POOL - 1));
    const ring = Array.from({ length: k }, (_, i) => pool[(round * 3 + i * (round % 2 === 0 ? 1 : POOL - 1)) % POOL] as string);
    const answers = await Promise.all(ring.map((id, i) => client(i + round).patch(`/backends/weighted/${id}`, { backends: { [ring[(i + 1) % k] as string]: 1 } })));
    answers.forEach((r, i) => {
      if (r.status >= 500) report.serverErrors.push(`round ${round}: PATCH ${ring[i]} answered ${r.status} ${r.json?.error_code ?? r.text}`);
    });
    const statuses = answers.map((r) => `${r.status}${r.status === 400 ? ` ${r.json?.error_code}` : ""}`).sort();
    const expected = [...Array<string>(k - 1).fill("200"), "400 ERR_NGROK_6524"];
    if (statuses.join() !== expected.join()) report.otherAnswers.push(`round ${round} (${k} objects): ${describeAnswers(answers)}`);
    const cycle = findCycle(await readGraph(clients, pool));
    if (cycle) report.cycles.push(`round ${round} (${k} objects): ${cycle}`);
    for (const [i, id] of ring.entries()) {
      const r = await client(i).patch(`/backends/weighted/${id}`, { backends: {} });
      expect(r.status, r.text).toBe(200);
    }
  }
  return report;
}
