import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/api/client.js";
import { checkBaseUrl, clientOptionsFrom, loadApiKey } from "../../src/api/options.js";
import { isLoopbackHost } from "../../src/model/syntax.js";
import { EdgeplanError } from "../../src/model/errors.js";

const KEY = "ep_test_SECRET_key_0123456789";

async function errorOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a rejection");
}

describe("isLoopbackHost and checkBaseUrl", () => {
  it("knows loopback hosts", () => {
    for (const h of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]", "::1", "[::ffff:7f00:1]"]) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ["128.0.0.1", "10.0.0.1", "127.0.0.256", "localhost.example.com", "example.com", "[::2]", "0.0.0.0"]) {
      expect(isLoopbackHost(h)).toBe(false);
    }
  });

  it("allows https anywhere and http to loopback, and normalises the trailing slash", () => {
    expect(checkBaseUrl("https://api.example.com/", false)).toBe("https://api.example.com");
    expect(checkBaseUrl("https://api.example.com/v2/", false)).toBe("https://api.example.com/v2");
    expect(checkBaseUrl("http://127.0.0.1:4780", false)).toBe("http://127.0.0.1:4780");
    expect(checkBaseUrl("http://localhost:4780/", false)).toBe("http://localhost:4780");
    expect(checkBaseUrl("http://[::1]:4780", false)).toBe("http://[::1]:4780");
  });

  it("refuses plain http to another host unless --insecure-http", () => {
    expect(() => checkBaseUrl("http://api.example.com", false)).toThrow(
      "--api-url: refusing plain http:// to api.example.com: the API key would travel unencrypted; use https://, or pass --insecure-http if this network is trusted (plain http is allowed to loopback hosts only)",
    );
    expect(checkBaseUrl("http://api.example.com", true)).toBe("http://api.example.com");
  });

  it("refuses other schemes, credentials, queries and non-URLs", () => {
    expect(() => checkBaseUrl("ftp://x", false)).toThrow('--api-url: only http and https are supported, got "ftp"');
    expect(() => checkBaseUrl("https://u:p@x.example", false)).toThrow("--api-url: credentials in the URL are not accepted");
    expect(() => checkBaseUrl("https://x.example/?a=1", false)).toThrow("--api-url: the base URL must not have a query or fragment");
    expect(() => checkBaseUrl("not a url", false)).toThrow('--api-url: "not a url" is not a URL');
  });

  it("createClient refuses plain http to a remote host too", () => {
    expect(() =>
      createClient({
        baseUrl: "http://api.example.com",
        apiKey: KEY,
        concurrency: 1,
        rateLimit: null,
        retries: 0,
        timeoutMs: 1000,
        versionHeader: "Ngrok-Version",
        insecureHttp: false,
      }),
    ).toThrow("refusing plain http:// to api.example.com");
  });
});

describe("loadApiKey and clientOptionsFrom", () => {
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "edgeplan-options-"));
    await writeFile(join(dir, "key"), `${KEY}\n`);
    await writeFile(join(dir, "empty"), "\n");
    await writeFile(join(dir, "spaced"), "two words\n");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("reads the variable the project file's api_key_env names, never EDGEPLAN_API_KEY in its place", async () => {
    expect(await loadApiKey(undefined, { EDGEPLAN_API_KEY_PROD: KEY, EDGEPLAN_API_KEY: "staging-key" }, "EDGEPLAN_API_KEY_PROD")).toBe(KEY);
    expect((await errorOf(loadApiKey(undefined, { EDGEPLAN_API_KEY: "staging-key" }, "EDGEPLAN_API_KEY_PROD"))).message).toBe(
      "no API key: set EDGEPLAN_API_KEY_PROD (the project file's api_key_env), or pass --api-key-file FILE (a file holding the key)",
    );
  });

  it("reads the key from the file (trimmed), else from EDGEPLAN_API_KEY", async () => {
    expect(await loadApiKey(join(dir, "key"), { EDGEPLAN_API_KEY: "other" })).toBe(KEY);
    expect(await loadApiKey(undefined, { EDGEPLAN_API_KEY: ` ${KEY} ` })).toBe(KEY);
  });

  it("explains a missing key, naming both sources", async () => {
    const err = await errorOf(loadApiKey(undefined, {}));
    expect(err).toBeInstanceOf(EdgeplanError);
    expect(err.message).toBe("no API key: set EDGEPLAN_API_KEY, or pass --api-key-file FILE (a file holding the key)");
    expect((await errorOf(loadApiKey(undefined, { EDGEPLAN_API_KEY: "" }))).message).toBe(
      "EDGEPLAN_API_KEY is set but empty; set it to the API key, or pass --api-key-file FILE",
    );
  });

  it("explains unreadable, empty and unsendable key files without printing their content", async () => {
    expect((await errorOf(loadApiKey(join(dir, "nope"), {}))).message).toBe(`--api-key-file ${join(dir, "nope")}: cannot read the API key file (no such file)`);
    expect((await errorOf(loadApiKey(join(dir, "empty"), {}))).message).toBe(`--api-key-file ${join(dir, "empty")}: the API key file is empty`);
    const spaced = await errorOf(loadApiKey(join(dir, "spaced"), {}));
    expect(spaced.message).toBe(`--api-key-file ${join(dir, "spaced")}: the API key contains spaces, control or non-ASCII characters, which cannot be sent in a header`);
    expect(spaced.message).not.toContain("two words");
  });

  it("turns the common flags into client options, with the documented defaults", async () => {
    const opts = await clientOptionsFrom({ apiUrl: "http://127.0.0.1:4780/" }, { EDGEPLAN_API_KEY: KEY });
    expect(opts).toEqual({
      baseUrl: "http://127.0.0.1:4780",
      apiKey: KEY,
      concurrency: 4,
      rateLimit: { count: 120, windowMs: 60_000 },
      retries: 5,
      timeoutMs: 30_000,
      versionHeader: "Ngrok-Version",
      insecureHttp: false,
    });
    const custom = await clientOptionsFrom(
      {
        apiUrl: "http://api.internal:8080",
        apiKeyFile: join(dir, "key"),
        concurrency: "8",
        rateLimit: "off",
        retries: "0",
        timeout: "2s",
        versionHeader: "Service-Version",
        insecureHttp: true,
        verbose: true,
      },
      {},
    );
    expect(custom).toMatchObject({
      baseUrl: "http://api.internal:8080",
      apiKey: KEY,
      concurrency: 8,
      rateLimit: null,
      retries: 0,
      timeoutMs: 2000,
      versionHeader: "Service-Version",
      insecureHttp: true,
    });
    expect(typeof custom.log).toBe("function");
  });

  it("takes the URL from EDGEPLAN_API_URL, and the overrides of an embedded server", async () => {
    expect((await clientOptionsFrom({}, { EDGEPLAN_API_URL: "https://api.example.com", EDGEPLAN_API_KEY: KEY })).baseUrl).toBe("https://api.example.com");
    const local = await clientOptionsFrom({}, {}, { baseUrl: "http://127.0.0.1:5000", apiKey: "local-key" });
    expect(local.baseUrl).toBe("http://127.0.0.1:5000");
    expect(local.apiKey).toBe("local-key");
  });

  it("names the flag of every bad value", async () => {
    const env = { EDGEPLAN_API_KEY: KEY };
    const url = "http://127.0.0.1:1";
    expect((await errorOf(clientOptionsFrom({}, env))).message).toBe("no API URL: pass --api-url URL or set EDGEPLAN_API_URL (or use --local for an embedded server)");
    expect((await errorOf(clientOptionsFrom({ apiUrl: url, concurrency: "0" }, env))).message).toBe('--concurrency: expected a whole number from 1 to 256, got "0"');
    expect((await errorOf(clientOptionsFrom({ apiUrl: url, concurrency: "2.5" }, env))).message).toBe('--concurrency: expected a whole number from 1 to 256, got "2.5"');
    expect((await errorOf(clientOptionsFrom({ apiUrl: url, retries: "many" }, env))).message).toBe('--retries: expected a whole number from 0 to 20, got "many"');
    expect((await errorOf(clientOptionsFrom({ apiUrl: url, rateLimit: "fast" }, env))).message).toContain("--rate-limit: expected N/DURATION");
    expect((await errorOf(clientOptionsFrom({ apiUrl: url, timeout: "0" }, env))).message).toContain("--timeout: expected milliseconds");
    expect((await errorOf(clientOptionsFrom({ apiUrl: url, versionHeader: "Bad Header" }, env))).message).toBe(
      '--version-header: "Bad Header" is not a valid header name (letters, digits and - only, e.g. Ngrok-Version)',
    );
    expect((await errorOf(clientOptionsFrom({ apiUrl: "http://10.1.2.3" }, env))).message).toContain("refusing plain http:// to 10.1.2.3");
  });
});
