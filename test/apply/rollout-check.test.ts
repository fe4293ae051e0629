/** The rollout check against a loopback HTTP server: statuses, retries, timeouts, refused addresses. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRolloutCheck } from "../../src/apply/rollout.js";

let server: Server;
let base = "";
const hits: string[] = [];
let flaky = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? "");
    if (req.url === "/slow") return void setTimeout(() => res.end("late"), 1000);
    if (req.url === "/flaky") {
      res.statusCode = flaky++ < 2 ? 503 : 200;
      return void res.end();
    }
    res.statusCode = Number((req.url ?? "/200").slice(1)) || 200;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const check = (path: string, expect_status: number | null = null, timeout_ms = 2000) => ({ url: `${base}${path}`, expect_status, timeout_ms });

describe("runRolloutCheck", () => {
  it("passes on any 2xx, or on exactly the expected status", async () => {
    expect(await runRolloutCheck(check("/204"))).toEqual({ ok: true });
    expect(await runRolloutCheck(check("/404", 404))).toEqual({ ok: true });
  });

  it("retries twice before it fails, and names the check and the last reason", async () => {
    const before = hits.length;
    expect(await runRolloutCheck(check("/200", 201))).toEqual({ ok: false, reason: `check GET ${base}/200 failed 3 times: HTTP 200, expected 201` });
    expect(hits.length - before).toBe(3);
    expect(await runRolloutCheck(check("/302"))).toEqual({ ok: false, reason: `check GET ${base}/302 failed 3 times: HTTP 302, expected a 2xx status` });
  });

  it("passes when a retry succeeds", async () => {
    flaky = 0;
    expect(await runRolloutCheck(check("/flaky"))).toEqual({ ok: true });
  });

  it("fails on a timeout and on a refused connection", async () => {
    expect(await runRolloutCheck(check("/slow", null, 200))).toEqual({ ok: false, reason: `check GET ${base}/slow failed 3 times: no answer within 200 ms` });
    const closed = await runRolloutCheck({ url: "http://127.0.0.1:1/x", expect_status: null, timeout_ms: 500 });
    expect(closed).toMatchObject({ ok: false });
    expect((closed as { reason: string }).reason).toMatch(/^check GET http:\/\/127\.0\.0\.1:1\/x failed 3 times: connect ECONNREFUSED 127.0.0.1:1$/);
  });

  it("sends nothing to a plain http address that is not loopback", async () => {
    expect(await runRolloutCheck({ url: "http://status.example.com/x", expect_status: null, timeout_ms: 500 })).toEqual({
      ok: false,
      reason: "check http://status.example.com/x: plain http is accepted only to a loopback host (127.0.0.1, ::1, localhost); use https for status.example.com",
    });
  });
});
