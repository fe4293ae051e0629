/**
 * A scripted HTTP server on 127.0.0.1 for client tests that need answers the real server does not give on demand
 * (a malformed body, a Retry-After date, a key echoed back). Each request is recorded; `handle` decides the answer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type Handler = (req: Recorded, res: ServerResponse, n: number) => void;

export interface Stub {
  url: string;
  requests: Recorded[];
  /** Most requests being handled at once. */
  maxInFlight: number;
  handle: Handler;
  close(): Promise<void>;
}

export async function startStub(handle: Handler = (_req, res) => json(res, 200, {})): Promise<Stub> {
  let inFlight = 0;
  const stub: Stub = {
    url: "",
    requests: [],
    maxInFlight: 0,
    handle,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    inFlight++;
    stub.maxInFlight = Math.max(stub.maxInFlight, inFlight);
    res.on("close", () => inFlight--);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rec: Recorded = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      stub.requests.push(rec);
      stub.handle(rec, res, stub.requests.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return stub;
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function apiError(res: ServerResponse, status: number, code: string | undefined, msg: string, headers: Record<string, string> = {}): void {
  json(res, status, { ...(code ? { error_code: code } : {}), status_code: status, msg, details: { operation_id: "op_stub" } }, headers);
}

/** Destroys the connection without an answer (a lost answer). */
export function drop(res: ServerResponse): void {
  res.socket?.destroy();
}

export function weightedBackend(id: string, base: string, extra: Partial<Record<string, unknown>> = {}): Record<string, unknown> {
  return {
    id,
    uri: `${base}/backends/weighted/${id}`,
    created_at: "2025-09-04T10:11:37Z",
    description: "",
    metadata: "",
    backends: {},
    ...extra,
  };
}

/** A well-formed id with the given prefix and a number in its body. */
export function idOf(prefix: string, n: number): string {
  return `${prefix}_${String(n).padStart(27, "0")}`;
}
