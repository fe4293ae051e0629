/**
 * The graph checks of weighted backends hold under any interleaving of two replicas on one database: rings of 2 to
 * 8 objects closed by concurrent PATCHes sent through both replicas never commit a cycle, and contention is never
 * answered with a 5xx. Runs in the `postgres` project only.
 */
import { afterAll, expect, it } from "vitest";
import { ringRace } from "../helpers/ring-race.js";
import { apiClient, freshDatabase, spawnServer, type SpawnedServer } from "../helpers/server.js";

const KEY = "ep_test_graph_races_key";
const running: SpawnedServer[] = [];
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
});

it("200 rings closed at once through two replicas: each ring refused once as a cycle, none committed, no 5xx", async () => {
  const db = await freshDatabase();
  for (let i = 0; i < 2; i++) running.push(await spawnServer(["--quiet", "--pool-size", "8", "--database", db], {}, { apiKey: KEY }));
  const report = await ringRace(
    running.map((s) => apiClient(s.url, KEY)),
    200,
  );
  expect(report).toEqual({ cycles: [], serverErrors: [], otherAnswers: [] });
}, 120_000);
