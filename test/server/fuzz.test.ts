/**
 * An HTTP fuzz of every endpoint, on the store of the test project (SQLite, then PostgreSQL): lanes of drawn
 * requests (test/helpers/http-fuzz-steps.ts), 16 at a time, each on an account of its own whose every object the
 * lane models, so each answer is checked against what the account must hold (test/helpers/http-fuzz.ts): no 5xx,
 * every error in the API's shape, every write read back as it was answered, a refused write changing nothing.
 *
 * The requests are drawn from the property seed (test/helpers/property-seed.ts: EDGEPLAN_PROPERTY_SEED=N draws
 * others), so a failure is met again by running with the seed its message names. `npm run fuzz` runs it longer:
 * EDGEPLAN_FUZZ_REQUESTS sets how many requests per store (at least 20,000 here).
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SAML_DEFAULTS } from "../../src/model/wire.js";
import { accountForKey } from "../../src/server/index.js";
import { makeSigningCertificate } from "../../src/server/saml-certificate.js";
import { Lane, type LaneWorld } from "../helpers/http-fuzz.js";
import { step } from "../helpers/http-fuzz-steps.js";
import { fakeId, startTestServer, type TestServer } from "../helpers/server.js";

const IDP = readFileSync(new URL("./fixtures/idp-metadata.xml", import.meta.url), "utf8");
const SP = "https://sp.fuzz.example";
const REQUESTS = Number(process.env.EDGEPLAN_FUZZ_REQUESTS ?? 20_000);
const LANES = 16;
/** Every step sends at least one request, so this many rounds of LANES lanes reach REQUESTS. */
const ROUNDS = 4;
const STEPS = Math.ceil(REQUESTS / (LANES * ROUNDS));
const KEYS = Array.from({ length: LANES * ROUNDS }, (_, i) => `ep_test_fuzz_${i}`);
const EDGE = fakeId("edghts", 1);
const ROUTES: [string, string] = [fakeId("edghtsrt", 1), fakeId("edghtsrt", 2)];
const FIXTURES = [fakeId("bkdhr", 1), fakeId("bkdtg", 1), fakeId("bkdfo", 1), fakeId("bkdsc", 1)];

/** Every endpoint of docs/api.md, each of which the fuzz must see succeed. */
const ENDPOINTS = [
  "DELETE /backends/weighted/:bkdwd",
  "DELETE /edges/https/:edghts/routes/:edghtsrt/circuit_breaker",
  "DELETE /edges/https/:edghts/routes/:edghtsrt/saml",
  "GET /backends/weighted",
  "GET /backends/weighted/:bkdwd",
  "GET /edges/https",
  "GET /edges/https/:edghts",
  "GET /edges/https/:edghts/routes/:edghtsrt",
  "GET /edges/https/:edghts/routes/:edghtsrt/circuit_breaker",
  "GET /edges/https/:edghts/routes/:edghtsrt/saml",
  "PATCH /backends/weighted/:bkdwd",
  "POST /backends/weighted",
  "PUT /edges/https/:edghts/routes/:edghtsrt/circuit_breaker",
  "PUT /edges/https/:edghts/routes/:edghtsrt/saml",
];

let s: TestServer;
let certificate: string;

beforeAll(async () => {
  s = await startTestServer({ apiKeys: KEYS, spBase: SP });
  certificate = await makeSigningCertificate(`${SP}/saml/seed`);
});
afterAll(() => s.close());

/**
 * Gives the account of `key` an edge with two routes (the first with both modules set, the second with SAML only,
 * each with a certificate made once for the whole run, so the fuzz makes a key only after deleting one) and one
 * fixture backend of each kind.
 */
async function seed(key: string): Promise<void> {
  const account = accountForKey(key);
  await s.read(async (tx) => {
    for (const route of ROUTES) await tx.ensureRoute(account, EDGE, route);
    for (const id of FIXTURES) await tx.ensureBackend(account, id);
    for (const route of ROUTES) await tx.setSaml(account, route, { ...SAML_DEFAULTS, idp_metadata: IDP, certificate_pem: certificate });
    await tx.setCircuitBreaker(account, ROUTES[0], {
      enabled: true,
      tripped_duration: 10,
      rolling_window: 10,
      num_buckets: 10,
      volume_threshold: 0,
      error_threshold_percentage: 0.5,
    });
  });
}

async function runLane(key: string, steps: ReturnType<typeof step.generate>["value"][], where: string): Promise<Lane> {
  await seed(key);
  const world: LaneWorld = { url: s.url, key, spBase: SP, edge: EDGE, routes: ROUTES, fixtures: FIXTURES, idp: IDP };
  const lane = new Lane(world);
  await lane.start();
  for (const [i, one] of steps.entries()) {
    try {
      await lane.run(one);
    } catch (err) {
      throw new Error(`${where}, step ${i} (${one.op}): ${(err as Error).message}`, { cause: err });
    }
  }
  return lane;
}

it(`answers ${REQUESTS} drawn requests to every endpoint with no 5xx, errors in the API's shape, and writes read back as answered`, async () => {
  const seedOfRun = fc.readConfigureGlobal().seed ?? Date.now();
  let requests = 0;
  let keysMade = 0;
  const succeeded = new Set<string>();
  for (let round = 0; round < ROUNDS && requests < REQUESTS; round++) {
    const lanes = fc.sample(fc.array(step, { minLength: STEPS, maxLength: STEPS }), { seed: seedOfRun + round, numRuns: LANES });
    const where = (lane: number): string => `${s.store.kind} fuzz, EDGEPLAN_PROPERTY_SEED=${seedOfRun} EDGEPLAN_FUZZ_REQUESTS=${REQUESTS}, round ${round}, lane ${lane}`;
    const done = await Promise.all(lanes.map((steps, lane) => runLane(KEYS[round * LANES + lane] as string, steps, where(lane))));
    requests += done.reduce((n, l) => n + l.requests, 0);
    keysMade += done.reduce((n, l) => n + l.keysMade, 0);
    for (const lane of done) for (const endpoint of lane.succeeded) succeeded.add(endpoint);
  }
  expect(requests).toBeGreaterThanOrEqual(REQUESTS);
  expect([...succeeded].sort()).toEqual(ENDPOINTS);
  // The SAML PUTs after a DELETE made keys of their own, and checked that the next read gave them back.
  expect(keysMade).toBeGreaterThan(0);
}, 600_000);
