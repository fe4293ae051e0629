/**
 * Making a SAML module's key pair (tens of milliseconds of RSA work) holds no other request up: while one account
 * deletes and sets the SAML module of four routes over and over, so that every PUT makes a new key, another
 * account's reads stay fast. On SQLite, whose transactions run one at a time, a key made inside the PUT's transaction
 * made every other account's request wait for it.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { apiClient, fakeId, startTestServer, type ApiClient, type TestServer } from "../helpers/server.js";

const IDP = readFileSync(new URL("./fixtures/idp-metadata.xml", import.meta.url), "utf8");
const EDGE = fakeId("edghts", 1);
const ROUTES = [1, 2, 3, 4].map((n) => fakeId("edghtsrt", n));
const OTHER_KEY = "ep_test_saml_contention_reader";
/** How long the SAML loops run at least, */
const RUN_MS = 3_000;
/** and how many keys they make at least (on a loaded machine 3 s may give fewer), */
const MIN_KEYS = 8;
/** unless this much time has passed. */
const MAX_RUN_MS = 20_000;
/**
 * The p99 a read of the other account must stay under. Generous: on a loaded machine with two cores, reads measured
 * a p99 of 2 to 4 ms with keys made one at a time outside the transaction, and 400 to 630 ms (10 to 65 reads in
 * 3 s) with keys made inside it, several at once.
 */
const P99_BOUND_MS = 150;

let s: TestServer;
let owner: ApiClient;
let reader: ApiClient;

beforeAll(async () => {
  s = await startTestServer({
    apiKeys: [OTHER_KEY],
    fixtures: { edges: [{ id: EDGE, routes: ROUTES.map((id) => ({ id, match: `/${id}`, match_type: "path_prefix" })) }] },
  });
  owner = apiClient(s.url, s.apiKey);
  reader = apiClient(s.url, OTHER_KEY);
});
afterAll(() => s.close());

/** When the SAML loops stop: `RUN_MS` passed and `MIN_KEYS` keys made, or `MAX_RUN_MS` passed. */
class Run {
  private readonly started = performance.now();
  keys = 0;
  over(): boolean {
    const ran = performance.now() - this.started;
    return (ran >= RUN_MS && this.keys >= MIN_KEYS) || ran >= MAX_RUN_MS;
  }
}

/** Deletes and sets the SAML module of `route` until the run is over; resolves with the certificates answered. */
async function churn(route: string, run: Run): Promise<string[]> {
  const path = `/edges/https/${EDGE}/routes/${route}/saml`;
  const certificates: string[] = [];
  while (!run.over()) {
    const del = await owner.del(path);
    expect([204, 404], del.text).toContain(del.status);
    const put = await owner.put(path, { idp_metadata: IDP });
    expect(put.status, put.text).toBe(200);
    certificates.push(put.json.request_signing_certificate_pem as string);
    run.keys++;
  }
  return certificates;
}

/** Reads the other account's weighted backend until the SAML loops stop; resolves with each read's time in ms. */
async function read(path: string, churning: Promise<unknown>): Promise<number[]> {
  let stopped = false;
  const stop = (): void => {
    stopped = true;
  };
  churning.then(stop, stop);
  const times: number[] = [];
  while (!stopped) {
    const started = performance.now();
    const r = await reader.get(path);
    times.push(performance.now() - started);
    expect(r.status, r.text).toBe(200);
  }
  return times;
}

it(`another account's reads keep a p99 under ${P99_BOUND_MS} ms while one account's SAML PUTs make keys`, async () => {
  const made = await reader.post("/backends/weighted", { description: "read while keys are made", backends: {} });
  expect(made.status, made.text).toBe(201);
  const run = new Run();
  const churning = Promise.all(ROUTES.map((route) => churn(route, run)));
  const [times, perRoute] = await Promise.all([read(`/backends/weighted/${made.json.id as string}`, churning), churning]);
  const certificates = perRoute.flat();
  // Every PUT after a DELETE made a key of its own.
  expect(new Set(certificates).size).toBe(certificates.length);
  expect(certificates.length).toBeGreaterThanOrEqual(MIN_KEYS);
  const sorted = [...times].sort((a, b) => a - b);
  const p99 = sorted[Math.floor(sorted.length * 0.99)] as number;
  expect(p99, `p99 of ${times.length} reads while ${certificates.length} keys were made`).toBeLessThan(P99_BOUND_MS);
}, 60_000);
