/**
 * A front for an API server on loopback that breaks one request of a run: the Nth request (counted as they come,
 * which is the order of the client's requests with `--concurrency 1`) meets the fault, every other one is passed on.
 * For the connection faults (a certificate for another host, nothing listening) every answer closes its connection,
 * so that each request opens one of its own and the fault lands on the Nth request; those two persist from the Nth
 * on, as a wrong certificate or a stopped server would. Only the certificate fault is served over TLS (a handshake
 * per request costs more CPU than the rest of a run); the others over plain HTTP, with keep-alive.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server as HttpServer } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";

export const FAULTS = ["tls-name", "refused", "reset", "timeout", "5xx", "invalid-json"] as const;
export type Fault = (typeof FAULTS)[number];

/** A self-signed certificate and its key, as PEM texts and the certificate's file. */
export interface Pem {
  cert: string;
  key: string;
  certFile: string;
}

/** Makes a self-signed certificate with this subjectAltName in `dir` (openssl, as test/commands/serve-tls.test.ts). */
export function selfSigned(dir: string, name: string, altName: string): Pem {
  const [certFile, keyFile] = [join(dir, `${name}.crt`), join(dir, `${name}.key`)];
  const subject = ["-subj", `/CN=${name}`, "-addext", `subjectAltName=${altName}`];
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", ...subject];
  execFileSync("openssl", [...args, "-keyout", keyFile, "-out", certFile], { stdio: "ignore" });
  return { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8"), certFile };
}

/** The certificates of the front: `good` names 127.0.0.1, `wrong` names another host. */
export interface FrontCerts {
  good: Pem;
  wrong: Pem;
}

export interface FaultProxy {
  url: string;
  /** `METHOD /path` of every request that reached the front, in order. */
  seen: string[];
  /** Whether the fault was met (an answer without a body cannot be made invalid JSON, and one never comes). */
  injected(): boolean;
  close(): Promise<void>;
}

/** Starts a front for `target` (http://127.0.0.1:PORT) that gives request number `at` (from 1) the `fault`; none with null. */
export async function startFaultProxy(target: string, certs: FrontCerts, fault: Fault | null, at: number): Promise<FaultProxy> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let injected = false;
  const handler = (req: IncomingMessage, res: import("node:http").ServerResponse): void => {
    seen.push(`${req.method} ${req.url}`);
    const n = seen.length;
    if (fault === "tls-name" || fault === "refused") res.shouldKeepAlive = false;
    if (fault === "refused" && n === at - 1) res.on("finish", () => front.close());
    if (n !== at || fault === "refused" || fault === "tls-name" || fault === null) return void forward(target, req).then((a) => answer(res, a));
    injected = fault !== "invalid-json";
    if (fault === "timeout") return; // held until the client gives up and the front closes
    if (fault === "5xx") return answer(res, { status: 500, headers: {}, body: JSON.stringify({ error_code: "ERR_NGROK_500", status_code: 500, msg: "injected failure" }) });
    void forward(target, req).then((a) => {
      if (fault === "invalid-json") {
        injected = a.body !== "";
        return answer(res, injected ? { ...a, body: `${a.body.slice(0, 10)}<html>not JSON` } : a);
      }
      // reset: half of the body, then the connection cut (nothing at all for an answer without a body)
      if (a.body === "") return void res.socket?.destroy();
      res.writeHead(a.status, { "content-type": "application/json", "content-length": Buffer.byteLength(a.body) });
      res.write(a.body.slice(0, Math.floor(a.body.length / 2)), () => res.socket?.destroy());
    });
  };
  const tls = (pem: Pem): HttpsServer | HttpServer => createHttpsServer({ cert: pem.cert, key: pem.key }, handler);
  const [good, wrong] = fault === "tls-name" ? [tls(certs.good), tls(certs.wrong)] : [createHttpServer(handler), createHttpServer(handler)];
  const front = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    connections++;
    const wrongName = fault === "tls-name" && connections >= at;
    injected ||= wrongName;
    (wrongName ? wrong : good).emit("connection", socket);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const url = `${fault === "tls-name" ? "https" : "http"}://127.0.0.1:${(front.address() as AddressInfo).port}`;
  if (fault === "refused" && at === 1) front.close();
  return {
    url,
    seen,
    // Nothing listening is met by the request after the last one answered, when there is one.
    injected: () => injected || (fault === "refused" && seen.length === at - 1),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => (front.listening ? front.close(() => resolve()) : resolve()));
    },
  };
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Passes one request on to the server and reads its whole answer. */
function forward(target: string, req: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, host: new URL(target).host, connection: "close" };
    const out = httpRequest(`${target}${req.url}`, { method: req.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const kept: Record<string, string> = {};
        for (const name of ["content-type", "retry-after", "date"]) {
          const v = res.headers[name];
          if (typeof v === "string") kept[name] = v;
        }
        resolve({ status: res.statusCode ?? 502, headers: kept, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    out.on("error", reject);
    req.pipe(out);
  });
}

function answer(res: import("node:http").ServerResponse, a: Answer): void {
  if (res.destroyed) return;
  res.writeHead(a.status, a.body === "" ? a.headers : { ...a.headers, "content-length": Buffer.byteLength(a.body) });
  res.end(a.body);
}
