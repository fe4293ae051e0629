/**
 * The graph checks of weighted backends hold under any interleaving on one server, on the project's store: rings of
 * 2 to 8 objects closed by concurrent PATCHes never commit a cycle, and contention is never answered with a 5xx.
 * (Several replicas on one PostgreSQL database: test/postgres/graph-races.test.ts.)
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ringRace } from "../helpers/ring-race.js";
import { apiClient, startTestServer, type TestServer } from "../helpers/server.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

it("200 rings closed at once: each ring refused once as a cycle, none committed, no 5xx", async () => {
  const report = await ringRace([apiClient(s.url, s.apiKey)], 200);
  expect(report).toEqual({ cycles: [], serverErrors: [], otherAnswers: [] });
}, 120_000);
