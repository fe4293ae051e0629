/**
 * The store and the fixtures loader without HTTP: ids, persistence across reopen, ensure* for provisioning,
 * fixtures parsing with positions, and idempotent loading (on the project's store: SQLite or PostgreSQL).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { ManifestError } from "../../src/model/errors.js";
import { accountForKey, applyFixtures, loadFixturesFile, provisionServer } from "../../src/server/index.js";
import { decodeBase62, encodeBase62, ksuidSeconds, MonotonicKsuid, randomKsuid, rfc3339Seconds } from "../../src/server/ksuid.js";
import { openStore } from "../../src/server/index.js";
import { openSqliteStore } from "../../src/server/sqlite-store.js";
import type { Store } from "../../src/server/store.js";
import { apiClient, fakeId, freshDatabase, startTestServer, TEST_STORE } from "../helpers/server.js";

const dir = mkdtempSync(join(tmpdir(), "edgeplan-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** The project's store: a SQLite file in the test folder, or a fresh PostgreSQL database. */
async function openTestStore(file: string): Promise<Store> {
  return TEST_STORE === "postgres" ? openStore({ databaseUrl: await freshDatabase(), poolSize: 2 }) : openStore({ dataFile: join(dir, file) });
}

const IDP = readFileSync(new URL("./fixtures/idp-metadata.xml", import.meta.url), "utf8");
const FIXTURES = new URL("./fixtures/fixtures.yaml", import.meta.url).pathname;
const INVALID = new URL("./fixtures/invalid-fixtures.yaml", import.meta.url).pathname;

describe("KSUIDs", () => {
  it("encode 20 bytes as 27 base62 characters and back", () => {
    const zero = new Uint8Array(20);
    expect(encodeBase62(zero)).toBe("0".repeat(27));
    const max = new Uint8Array(20).fill(255);
    expect(encodeBase62(max)).toBe("aWgEPTl1tmebfsQzFP4bxwgy80V");
    const bytes = Uint8Array.from({ length: 20 }, (_, i) => i * 13);
    expect(decodeBase62(encodeBase62(bytes))).toEqual(bytes);
    expect(decodeBase62("!".repeat(27))).toBeUndefined();
    expect(decodeBase62("z".repeat(27))).toBeUndefined();
  });

  it("carry the second they were made", () => {
    const t = Date.UTC(2025, 8, 4, 10, 11, 37);
    expect(ksuidSeconds(randomKsuid(t))).toBe(t / 1000);
    expect(rfc3339Seconds(t / 1000)).toBe("2025-09-04T10:11:37Z");
  });

  it("are monotonic within one second, when the clock goes back, and after a restart", () => {
    const gen = new MonotonicKsuid();
    const t = Date.UTC(2025, 0, 1);
    const ids = [gen.next(t), gen.next(t), gen.next(t + 999), gen.next(t - 5000), gen.next(t + 1000)].map((x) => x.body);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(5);
    const restarted = new MonotonicKsuid(ids[4]);
    const after = restarted.next(t);
    expect(after.body > (ids[4] as string)).toBe(true);
    expect(after.seconds).toBe(t / 1000 + 1);
  });
});

describe("the SQLite store", () => {
  it("keeps what was written across a reopen of its file, and keeps ids monotonic", () => {
    const file = join(dir, "reopen.db");
    const account = accountForKey("k1");
    const first = openSqliteStore(file);
    const { id, created_at } = first.newId("bkdwd");
    first.syncTransaction(() => first.insertWeightedBackend(account, { id, created_at, description: "d", metadata: "m", backends: {} }));
    const route = first.ensureRoute(account, fakeId("edghts", 1), fakeId("edghtsrt", 1));
    first.setCircuitBreaker(account, route.id, {
      enabled: true,
      tripped_duration: 1,
      rolling_window: 2,
      num_buckets: 3,
      volume_threshold: 4,
      error_threshold_percentage: 0.5,
    });
    first.close();
    const second = openSqliteStore(file);
    try {
      expect(second.getWeightedBackend(account, id)).toEqual({ id, created_at, description: "d", metadata: "m", backends: {} });
      expect(second.getRoute(account, fakeId("edghts", 1), fakeId("edghtsrt", 1))?.circuit_breaker?.num_buckets).toBe(3);
      expect(second.newId("bkdwd").id > id).toBe(true);
      expect(second.getWeightedBackend(accountForKey("k2"), id)).toBeUndefined();
    } finally {
      second.close();
    }
  });

  it("holds no SAML private key: neither what a PUT stores nor what a file of an older edgeplan kept", async () => {
    const file = join(dir, "saml.db");
    const [edge, route] = [fakeId("edghts", 1), fakeId("edghtsrt", 1)];
    const s = await startTestServer({ dataFile: file, fixtures: { edges: [{ id: edge, routes: [{ id: route, match: "/", match_type: "path_prefix" }] }] } });
    const put = await apiClient(s.url, s.apiKey).put(`/edges/https/${edge}/routes/${route}/saml`, { idp_metadata: IDP });
    expect(put.status).toBe(200);
    await s.close();
    const bytes = (): string => ["", "-wal"].map((end) => (existsSync(file + end) ? readFileSync(file + end).toString("latin1") : "")).join("");
    expect(bytes()).toContain("BEGIN CERTIFICATE");
    expect(bytes()).not.toContain("PRIVATE KEY");

    // A file of schema 1 kept the key beside the certificate; opening it drops the key, bytes included.
    const old = new Database(file);
    const row = old.prepare<[], { saml: string }>("SELECT saml FROM routes").get() as { saml: string };
    const withKey = { ...JSON.parse(row.saml), private_key_pem: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n" };
    old.prepare("UPDATE routes SET saml = ?").run(JSON.stringify(withKey));
    old.pragma("user_version = 1");
    old.close();
    expect(bytes()).toContain("PRIVATE KEY");
    await openSqliteStore(file).close();
    expect(bytes()).not.toContain("PRIVATE KEY");
    expect(bytes()).toContain("BEGIN CERTIFICATE");
  });

  it("ensure* create what is missing and return what exists unchanged", async () => {
    const store = await openTestStore("ensure.db");
    const account = accountForKey("k");
    try {
      await store.transaction(async (tx) => {
        const edge = await tx.ensureEdge(account, fakeId("edghts", 7), { hostports: ["a:443"] });
        expect(await tx.ensureEdge(account, fakeId("edghts", 7), { hostports: ["b:443"] })).toEqual(edge);
        const route = await tx.ensureRoute(account, fakeId("edghts", 8), fakeId("edghtsrt", 8));
        expect(route).toMatchObject({ edge_id: fakeId("edghts", 8), match: "/", match_type: "path_prefix", saml: null, circuit_breaker: null });
        expect(await tx.getEdge(account, fakeId("edghts", 8))).toBeDefined();
        await expect(async () => tx.ensureRoute(account, fakeId("edghts", 7), fakeId("edghtsrt", 8))).rejects.toThrow(
          `route ${fakeId("edghtsrt", 8)} already belongs to edge ${fakeId("edghts", 8)}, not ${fakeId("edghts", 7)}; a route has one edge`,
        );
        expect((await tx.ensureBackend(account, fakeId("bkdtg", 1))).type).toBe("tunnel_group");
        expect((await tx.ensureBackend(account, fakeId("bkdsc", 1))).type).toBe("static_address");
        await expect(async () => tx.ensureBackend(account, fakeId("bkdwd", 1))).rejects.toThrow(/is not a fixture backend id/);
        await expect(async () => tx.ensureEdge(account, "edghts_x")).rejects.toThrow(/is not an HTTPS edge id/);
        const wb = await tx.newId("bkdwd");
        await tx.insertWeightedBackend(account, { ...wb, description: "", metadata: "", backends: {} });
        const asked = [fakeId("bkdtg", 1), fakeId("bkdtg", 2), wb.id, fakeId("bkdwd", 9)];
        expect(await tx.existingBackends(account, asked)).toEqual(new Set([fakeId("bkdtg", 1), wb.id]));
        expect(await tx.existingBackends(accountForKey("other"), asked)).toEqual(new Set());
      });
    } finally {
      await store.close();
    }
  });
});

describe("fixtures", () => {
  it("loads the YAML file", () => {
    const f = loadFixturesFile(FIXTURES);
    expect(f.edges).toHaveLength(2);
    expect(f.edges[0]?.routes[1]).toEqual({ match: "/api", match_type: "path_prefix" });
    expect(f.backends.map((b) => b.type)).toEqual(["http_response", "tunnel_group", "failover", "static_address"]);
  });

  it("reports every problem as file:line:col", () => {
    let err: unknown;
    try {
      loadFixturesFile(INVALID);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ManifestError);
    const lines = (err as ManifestError).message.split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[0]).toBe(`${INVALID}:2:9: edges[0].id: expected edghts_ followed by 27 base62 characters`);
    expect(lines[1]).toMatch(new RegExp(`^${INVALID}:5:21: edges\\[0\\]\\.routes\\[0\\]\\.match_type: .*"exact_path"`));
    expect(lines.some((l) => l.startsWith(`${INVALID}:7:9: backends[0].id: a tunnel_group backend id is bkdtg_`))).toBe(true);
    expect(lines.some((l) => l.startsWith(`${INVALID}:9:5: backends[1]`) && l.includes("color"))).toBe(true);
  });

  it("reports YAML syntax errors and duplicate ids", () => {
    const bad = join(dir, "syntax.yaml");
    writeFileSync(bad, "edges: [\n");
    expect(() => loadFixturesFile(bad)).toThrow(new RegExp(`^${bad}:\\d+:\\d+: `));
    const dup = join(dir, "dup.yaml");
    writeFileSync(dup, `backends:\n  - {id: ${fakeId("bkdhr", 1)}, type: http_response}\n  - {id: ${fakeId("bkdhr", 1)}, type: http_response}\n`);
    expect(() => loadFixturesFile(dup)).toThrow(`${dup}:3:10: backends[1].id: id ${fakeId("bkdhr", 1)} is used twice (first at backends[0]); ids are unique`);
    expect(() => loadFixturesFile(join(dir, "missing.yaml"))).toThrow(/cannot read the fixtures file/);
  });

  it("reads the file as manifests are read: a repeated key, a second document and an alias bomb are refused at their lines", () => {
    const repeated = join(dir, "repeated.yaml");
    writeFileSync(repeated, `backends:\n  - id: ${fakeId("bkdhr", 1)}\n    type: http_response\n    type: static\n`);
    expect(() => loadFixturesFile(repeated)).toThrow(`${repeated}:4:5: this key appears twice in the same mapping; keep one of them`);
    const two = join(dir, "two.yaml");
    writeFileSync(two, "edges: []\n---\nbackends: []\n");
    expect(() => loadFixturesFile(two)).toThrow(`${two}:3:1: a fixtures file holds one document; remove this one`);
    const bomb = join(dir, "bomb.yaml");
    const levels = [
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      ...Array.from({ length: 6 }, (_, i) => `${"bcdefg"[i]}: &${"bcdefg"[i]} [${Array(10).fill(`*${"abcdef"[i]}`).join(", ")}]`),
    ];
    writeFileSync(bomb, `${levels.join("\n")}\n`);
    expect(() => loadFixturesFile(bomb)).toThrow(/expands aliases more than 100 times/);
  });

  it("refuses text no store can hold as written (a NUL, a lone surrogate), at its line, as the API does", () => {
    const file = join(dir, "text.yaml");
    writeFileSync(file, 'edges:\n  - hostports: ["a.example.com:443", "b\\ud800"]\n    routes:\n      - {match: "/a\\0b", match_type: exact_path}\n');
    let err: unknown;
    try {
      loadFixturesFile(file);
    } catch (e) {
      err = e;
    }
    expect((err as ManifestError).message.split("\n")).toEqual([
      `${file}:2:38: edges[0].hostports[1]: holds a lone UTF-16 surrogate (U+D800) at offset 1, which is not Unicode text and cannot be stored as sent; send whole characters`,
      `${file}:4:17: edges[0].routes[0].match: holds a NUL character (U+0000) at offset 2, which the API does not take in text; remove it`,
    ]);
  });

  it("loads idempotently: a second load into the same store creates nothing and keeps every id", async () => {
    const store = await openTestStore("fixtures.db");
    const account = accountForKey("fixtures");
    const snapshot = (): Promise<string> =>
      store.transaction(async (tx) => {
        const edges = await tx.listEdges(account, { limit: 10 });
        return JSON.stringify(await Promise.all(edges.map(async (e) => [e, await tx.routesOfEdge(account, e.id)])));
      });
    try {
      const f = loadFixturesFile(FIXTURES);
      const first = await applyFixtures(store, account, f);
      expect(first).toEqual({ edges: 2, routes: 4, backends: 4, created: 10 });
      const before = await snapshot();
      const second = await applyFixtures(store, account, f);
      expect(second).toEqual({ edges: 2, routes: 4, backends: 4, created: 0 });
      expect(await snapshot()).toBe(before);
      // A route added to an id-less edge is created; the rest is found again.
      const more = structuredClone(f);
      more.edges[1]?.routes.push({ match: "/new", match_type: "exact_path" });
      expect((await applyFixtures(store, account, more)).created).toBe(1);
    } finally {
      await store.close();
    }
  });

  it("provisions what a preview needs, says what it made, and makes nothing the second time", async () => {
    const store = await openTestStore("provision.db");
    const server = { store, account: accountForKey("local") };
    const needs = {
      routes: [
        { edge: fakeId("edghts", 21), route: fakeId("edghtsrt", 21) },
        { edge: fakeId("edghts", 21), route: fakeId("edghtsrt", 22) },
      ],
      backends: [fakeId("bkdtg", 21), fakeId("bkdhr", 21), fakeId("bkdtg", 21)],
    };
    try {
      expect(await provisionServer(server, needs)).toEqual([
        `edge ${fakeId("edghts", 21)}`,
        `route ${fakeId("edghtsrt", 21)}`,
        `route ${fakeId("edghtsrt", 22)}`,
        `backend ${fakeId("bkdhr", 21)}`,
        `backend ${fakeId("bkdtg", 21)}`,
      ]);
      expect(await provisionServer(server, needs)).toEqual([]);
      const routes = await store.transaction(async (tx) => tx.routesOfEdge(server.account, fakeId("edghts", 21)));
      expect(routes.map((r) => r.id).sort()).toEqual([fakeId("edghtsrt", 21), fakeId("edghtsrt", 22)]);
      await expect(provisionServer(server, { routes: [{ edge: fakeId("edghts", 22), route: fakeId("edghtsrt", 21) }], backends: [] })).rejects.toThrow(
        `route ${fakeId("edghtsrt", 21)} already belongs to edge ${fakeId("edghts", 21)}, not ${fakeId("edghts", 22)}; a route has one edge`,
      );
    } finally {
      await store.close();
    }
  });
});
