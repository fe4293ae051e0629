/**
 * Hostile requests to the server, over raw sockets where a well-behaved client library would refuse to send them:
 * oversized and endless bodies, deep JSON, slow clients, malformed and foreign ids, odd headers (duplicate
 * Authorization, huge headers, NUL bytes, smuggling), traversal-looking paths. Each gets the right error, nothing
 * is written, and all the while a well-formed client on another connection keeps getting 200s.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountForKey } from "../../src/server/index.js";
import { apiClient, randomKey, startTestServer, type ApiClient, type TestServer } from "../helpers/server.js";

interface RawResult {
  /** Everything the server sent. */
  text: string;
  status: number | undefined;
  /** The JSON body of the first answer, when there is one. */
  // biome-ignore lint/suspicious/noExplicitAny: the tests read whatever fields a hostile request's answer holds
  json: Record<string, any> | undefined;
  /** True when the server closed the connection (as opposed to our time limit ending it). */
  closedByServer: boolean;
}

/**
 * Opens a connection, writes `parts` (a `delayMs` pause before each one after the first), and collects the answer
 * until the server closes or `limitMs` passes. Half-closes after the last part only when `end` is true.
 */
function rawExchange(port: number, parts: Array<string | Buffer>, opts: { delayMs?: number; limitMs?: number; end?: boolean } = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let closedByServer = false;
    let timer: NodeJS.Timeout | undefined;
    let writer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      clearTimeout(writer);
      const text = Buffer.concat(chunks).toString("latin1");
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      const bodyStart = text.indexOf("\r\n\r\n");
      let json: RawResult["json"];
      try {
        json = bodyStart >= 0 ? (JSON.parse(text.slice(bodyStart + 4)) as RawResult["json"]) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ text, status: status === undefined ? undefined : Number(status), json, closedByServer });
    };
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      closedByServer = timer !== undefined;
      finish();
    });
    timer = setTimeout(() => {
      timer = undefined;
      socket.destroy();
    }, opts.limitMs ?? 5_000);
    let i = 0;
    const writeNext = (): void => {
      if (socket.destroyed) return;
      const part = parts[i++];
      if (part === undefined) {
        if (opts.end) socket.end();
        return;
      }
      socket.write(part);
      if (opts.delayMs) writer = setTimeout(writeNext, opts.delayMs);
      else writeNext();
    };
    socket.once("connect", writeNext);
  });
}

/** A well-formed client reading one object over and over (at most 10,000 times) until stopped. */
function keepReading(api: ApiClient, path: string): { stop(): Promise<number[]> } {
  const statuses: number[] = [];
  let stopped = false;
  const loop = (async () => {
    for (let i = 0; i < 10_000 && !stopped; i++) {
      try {
        statuses.push((await api.get(path)).status);
      } catch {
        statuses.push(0);
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return statuses;
    },
  };
}

describe("hostile requests", () => {
  let server: TestServer;
  let api: ApiClient;
  let ownId: string;
  let auth: string;
  let port: number;
  const otherKey = randomKey();

  beforeAll(async () => {
    server = await startTestServer({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, apiKeys: [otherKey] });
    api = apiClient(server.url, server.apiKey);
    port = server.port;
    auth = `Authorization: Bearer ${server.apiKey}\r\nNgrok-Version: 2\r\n`;
    const created = await api.post("/backends/weighted", { description: "the only object", backends: {} });
    expect(created.status).toBe(201);
    ownId = created.json.id as string;
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Runs `attack` while a well-formed client reads; checks that every read got 200 and nothing was written. */
  async function underAttack<T>(attack: () => Promise<T>): Promise<T> {
    const reader = keepReading(api, `/backends/weighted/${ownId}`);
    let result: T;
    try {
      result = await attack();
    } finally {
      const statuses = await reader.stop();
      expect(statuses.length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    }
    expect(await server.read((tx) => tx.countWeightedBackends(server.account))).toBe(1);
    const stored = await server.read((tx) => tx.getWeightedBackend(server.account, ownId));
    expect(stored?.description).toBe("the only object");
    expect(stored?.backends).toEqual({});
    return result;
  }

  const post = (headers: string, body: string | Buffer): Array<string | Buffer> => [
    `POST /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}${headers}Connection: close\r\n\r\n`,
    body,
  ];

  describe("bodies", () => {
    it("a 2 MiB body with a Content-Length gets 413 ERR_NGROK_413", async () => {
      const body = Buffer.alloc(2 * 1024 * 1024, " ");
      const r = await underAttack(() => rawExchange(port, post(`Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`, body)));
      expect(r.status).toBe(413);
      expect(r.json?.error_code).toBe("ERR_NGROK_413");
      expect(r.json?.msg).toBe("the body is larger than the limit of 1048576 bytes");
    });

    it("a chunked body that grows past the limit gets 413", async () => {
      const chunk = Buffer.alloc(256 * 1024, " ");
      const parts: Array<string | Buffer> = [
        `POST /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
      ];
      for (let i = 0; i < 8; i++) parts.push(`${chunk.length.toString(16)}\r\n`, chunk, "\r\n");
      parts.push("0\r\n\r\n");
      const r = await underAttack(() => rawExchange(port, parts));
      expect(r.status).toBe(413);
      expect(r.json?.error_code).toBe("ERR_NGROK_413");
    });

    it("a declared 1 GiB body is refused at once, without waiting for it, and the connection is closed", async () => {
      const r = await underAttack(() => rawExchange(port, post(`Content-Type: application/json\r\nContent-Length: ${2 ** 30}\r\n`, "{"), { limitMs: 5_000 }));
      expect(r.status).toBe(413);
      expect(r.closedByServer).toBe(true);
    });

    it("JSON nested 100,000 levels deep gets 400 ERR_NGROK_213", async () => {
      const body = `{"backends":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
      const r = await underAttack(() => rawExchange(port, post(`Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`, body)));
      expect(r.status).toBe(400);
      expect(r.json?.error_code).toBe("ERR_NGROK_213");
      expect(r.json?.msg).toBe("the body nests objects and arrays more than 32 levels deep");
    });

    it("a body that is not JSON, or has a raw NUL byte in a string, gets 400 ERR_NGROK_213", async () => {
      for (const body of ['{"backends": {', Buffer.from('{"description":"a\u0000b","backends":{}}')]) {
        const r = await underAttack(() => rawExchange(port, post(`Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`, body)));
        expect(r.status).toBe(400);
        expect(r.json?.error_code).toBe("ERR_NGROK_213");
        expect(r.json?.msg).toMatch(/^the body is not valid JSON: /);
      }
    });

    it("another content type gets 415 ERR_NGROK_210, none gets 400 ERR_NGROK_216", async () => {
      const body = '{"backends":{}}';
      for (const [type, status, code] of [
        ["text/plain", 415, "ERR_NGROK_210"],
        ["application/x-www-form-urlencoded", 415, "ERR_NGROK_210"],
        ["application/jsonp", 415, "ERR_NGROK_210"],
      ] as const) {
        const r = await underAttack(() => rawExchange(port, post(`Content-Type: ${type}\r\nContent-Length: ${body.length}\r\n`, body)));
        expect([r.status, r.json?.error_code]).toEqual([status, code]);
      }
      const none = await underAttack(() => rawExchange(port, post(`Content-Length: ${body.length}\r\n`, body)));
      expect([none.status, none.json?.error_code]).toEqual([400, "ERR_NGROK_216"]);
    });

    it("two Content-Type headers get 415 ERR_NGROK_210, even when both are JSON (nothing is written)", async () => {
      const body = '{"backends":{},"description":"two types"}';
      for (const types of [
        ["application/json", "text/plain"],
        ["text/plain", "application/json"],
        ["application/json", "application/json"],
      ]) {
        const head = types.map((t) => `Content-Type: ${t}\r\n`).join("");
        const r = await underAttack(() => rawExchange(port, post(`${head}Content-Length: ${body.length}\r\n`, body)));
        expect([r.status, r.json?.error_code, r.json?.msg]).toEqual([
          415,
          "ERR_NGROK_210",
          "the request has 2 Content-Type headers; send exactly one: Content-Type: application/json",
        ]);
      }
    });

    it("a body sent one byte at a time is cut by the request timeout (408)", async () => {
      const body = '{"backends":{},"description":"slow"}';
      const parts: Array<string | Buffer> = [
        `POST /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        ...body.split(""),
      ];
      const r = await underAttack(() => rawExchange(port, parts, { delayMs: 300, limitMs: 15_000 }));
      expect(r.closedByServer).toBe(true);
      expect(r.status).toBe(408);
      expect(r.json?.error_code).toBe("ERR_NGROK_408");
    });
  });

  describe("headers", () => {
    it("headers trickled past the headers timeout are cut (slowloris)", async () => {
      const head = `GET /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}X-Slow: ${"a".repeat(200)}`;
      const r = await underAttack(() => rawExchange(port, head.split(""), { delayMs: 100, limitMs: 15_000 }));
      expect(r.closedByServer).toBe(true);
      expect(r.status).toBe(408);
      expect(r.json?.error_code).toBe("ERR_NGROK_408");
      // The request never reached the pipeline: only the timeout was logged.
      expect(server.logLines.some((l) => l.error === "ERR_HTTP_REQUEST_TIMEOUT" && l.method === undefined)).toBe(true);
    });

    it("several Authorization headers get 401 ERR_NGROK_201, whichever of them is valid", async () => {
      const other = randomKey();
      for (const [first, second] of [
        [server.apiKey, other],
        [other, server.apiKey],
        [server.apiKey, server.apiKey],
      ]) {
        const r = await underAttack(() =>
          rawExchange(port, [
            `GET /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${first}\r\nAuthorization: Bearer ${second}\r\nNgrok-Version: 2\r\nConnection: close\r\n\r\n`,
          ]),
        );
        expect(r.status).toBe(401);
        expect(r.json?.error_code).toBe("ERR_NGROK_201");
        expect(r.text).toMatch(/\r\nWWW-Authenticate: Bearer\r\n/i);
        expect(r.text).not.toContain(server.apiKey);
      }
    });

    it("a 64 KiB header, or a 64 KiB URL, gets 431", async () => {
      for (const head of [
        `GET /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}X-Big: ${"b".repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`,
        `GET /backends/weighted/${"c".repeat(64 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Connection: close\r\n\r\n`,
      ]) {
        const r = await underAttack(() => rawExchange(port, [head]));
        expect(r.status).toBe(431);
        expect(r.json?.error_code).toBe("ERR_NGROK_431");
      }
    });

    it("NUL bytes in a header, both Content-Length and Transfer-Encoding, an unknown method, or bytes that are not HTTP get 400", async () => {
      const heads = [
        `GET /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.apiKey}\u0000x\r\nNgrok-Version: 2\r\n\r\n`,
        `POST /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 15\r\nTransfer-Encoding: chunked\r\n\r\n{"backends":{}}`,
        `FROB /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n`,
        "\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u01fc\u0003\u0003 not http at all\r\n\r\n",
      ];
      for (const head of heads) {
        const r = await underAttack(() => rawExchange(port, [head]));
        expect(r.status).toBe(400);
        expect(r.json?.error_code).toBe("ERR_NGROK_400");
        expect(r.closedByServer).toBe(true);
      }
    });

    it("no key, a key of another server, a Basic credential: 401, the key never echoed", async () => {
      const stranger = randomKey();
      for (const [header, code] of [
        ["", "ERR_NGROK_200"],
        [`Authorization: Bearer ${stranger}\r\n`, "ERR_NGROK_203"],
        [`Authorization: Basic ${Buffer.from(`u:${stranger}`).toString("base64")}\r\n`, "ERR_NGROK_201"],
      ]) {
        const r = await underAttack(() =>
          rawExchange(port, [`GET /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\n${header}Ngrok-Version: 2\r\nConnection: close\r\n\r\n`]),
        );
        expect([r.status, r.json?.error_code]).toEqual([401, code]);
        expect(r.text).not.toContain(stranger);
      }
    });
  });

  describe("paths and ids", () => {
    const get = (path: string): Promise<RawResult> => rawExchange(port, [`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Connection: close\r\n\r\n`]);

    it("malformed ids get 404 ERR_NGROK_222, cut to 80 characters in the answer", async () => {
      for (const id of ["bkdwd_short", `bkdwd_${"!".repeat(27)}`, `bkdhr_${"a".repeat(27)}`, `bkdwd_${"a".repeat(10_000)}`, "%00", "..%2f..%2fetc%2fpasswd", "%2e%2e"]) {
        const r = await underAttack(() => get(`/backends/weighted/${id}`));
        expect(r.status).toBe(404);
        expect(r.json?.error_code).toBe("ERR_NGROK_222");
        const shown = r.json?.details?.id;
        expect(shown).toBeTypeOf("string");
        expect((shown as string).length).toBeLessThanOrEqual(80);
      }
    });

    it("another account's id answers exactly as an id that does not exist (404 ERR_NGROK_404)", async () => {
      const theirs = apiClient(server.url, otherKey);
      const created = await theirs.post("/backends/weighted", { description: "theirs", backends: {} });
      expect(created.status).toBe(201);
      const foreign = created.json.id as string;
      const missing = `bkdwd_${"z".repeat(27)}`;
      for (const [method, body] of [
        ["GET", undefined],
        ["PATCH", { description: "taken", backends: {} }],
        ["DELETE", undefined],
      ] as const) {
        const [a, b] = await underAttack(async () => [
          await api.send(method, `/backends/weighted/${foreign}`, body === undefined ? {} : { body }),
          await api.send(method, `/backends/weighted/${missing}`, body === undefined ? {} : { body }),
        ]);
        expect([a?.status, a?.json.error_code]).toEqual([404, "ERR_NGROK_404"]);
        expect([b?.status, b?.json.error_code]).toEqual([404, "ERR_NGROK_404"]);
        expect(a?.json.msg.replace(foreign, "ID")).toBe(b?.json.msg.replace(missing, "ID"));
      }
      // Nor can it be used as a child, nor is it listed.
      const child = await api.post("/backends/weighted", { backends: { [foreign]: 1 } });
      expect([child.status, child.json.error_code]).toEqual([400, "ERR_NGROK_6501"]);
      const list = await api.get("/backends/weighted");
      expect(list.json.backends.map((b: { id: string }) => b.id)).toEqual([ownId]);
      expect((await server.read((tx) => tx.getWeightedBackend(accountForKey(otherKey), foreign)))?.description).toBe("theirs");
    });

    it("paths that look like traversal match nothing (404), and never another resource", async () => {
      for (const path of [
        "/backends/weighted/../../etc/passwd",
        "/backends/weighted/..",
        "/../backends/weighted",
        "//backends/weighted",
        "/backends//weighted",
        "/backends/weighted/",
        "/edges/https/../../backends/weighted",
        "http://evil.example/backends/weighted",
        "*",
      ]) {
        const r = await underAttack(() => get(path));
        expect(r.status).toBe(404);
        // Either the unknown-path shape or a malformed id: never a listing or an object.
        expect(r.json?.backends).toBeUndefined();
        expect(r.json?.id).toBeUndefined();
        expect(r.json?.details?.operation_id).toMatch(/^op_[0-9A-Za-z]{27}$/);
      }
    });
  });

  it("the request log never holds the key, and every hostile request left a line", () => {
    const text = server.logLines.map((l) => JSON.stringify(l)).join("\n");
    expect(text).not.toContain(server.apiKey);
    expect(server.logLines.some((l) => l.status === 413)).toBe(true);
    expect(server.logLines.some((l) => l.status === 431)).toBe(true);
  });

  it("a client that leaves while its write waits (latency, a busy server) is not served: nothing is written, the request is logged as aborted, and its in-flight slot is freed", async () => {
    const slow = await startTestServer({ latency: [400, 400], maxInflight: 1 });
    try {
      const body = JSON.stringify({ description: "abandoned", backends: {} });
      const r = await rawExchange(
        slow.port,
        [
          `POST /backends/weighted HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${slow.apiKey}\r\nNgrok-Version: 2\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ],
        { limitMs: 100 },
      );
      expect(r.status).toBeUndefined();
      // Bounded wait for the server to reach the request after its latency.
      for (let i = 0; i < 100 && !slow.logLines.some((l) => l.aborted === true); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(slow.logLines.filter((l) => l.method === "POST")).toEqual([expect.objectContaining({ status: 0, aborted: true })]);
      expect(await slow.read((tx) => tx.countWeightedBackends(slow.account))).toBe(0);
      // The one in-flight slot of this key is free again.
      expect((await apiClient(slow.url, slow.apiKey).get("/backends/weighted")).status).toBe(200);
    } finally {
      await slow.close();
    }
  });
});
